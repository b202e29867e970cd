"""One source for the settings: the options tree (completion/options.py) documents each
option, and docs/configuration.md, the VS Code extension's settings (package.json) and the
Neovim help follow it (scripts/configuration_doc.py writes them). Fails when any of them
drifts from the tree, or the tree's documentation from its own validation."""
from __future__ import annotations

import dataclasses
import importlib.util
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from inkling.completion import options as tree
from inkling.completion.errors import OptionError
from inkling.completion.options import GROUPS, InklingOptions

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "configuration_doc.py"
MANIFEST = REPO / "editors" / "vscode" / "package.json"
NVIM_HELP = REPO / "editors" / "nvim" / "doc" / "inkling.txt"
DOC = REPO / "docs" / "configuration.md"
# the VS Code extension's own settings: not sent to the server
CLIENT = {"enable", "triggerMode", "serverCommand", "pythonPath", "languages", "trace.server",
          "restart.initialDelayMs", "restart.maxDelayMs"}
# the tuples the validation checks a choice against
CHOICES = {"model.device": tree.DEVICES, "model.dtype": tree.DTYPES,
           "model.forward": tree.FORWARDS, "model.weights": tree.WEIGHT_FORMATS,
           "completion.fimOrder": tree.FIM_ORDERS,
           "completion.decoder": tree.DECODERS, "completion.draft": tree.DRAFT_MODES,
           "completion.monitor": tree.MONITOR_MODES, "completion.context": tree.CONTEXT_MODES,
           "cache.mode": tree.CACHE_MODES}


def _script():
    spec = importlib.util.spec_from_file_location("configuration_doc", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module             # its dataclass looks its module up
    spec.loader.exec_module(module)
    return module


doc = _script()
OPTIONS = doc.options()


def _properties() -> dict[str, dict]:
    sections = json.loads(MANIFEST.read_text())["contributes"]["configuration"]
    return {key.removeprefix("inkling."): prop for s in sections
            for key, prop in s["properties"].items()}


def _accepts(key: str, value) -> bool:
    section, name = key.split(".")
    # debounceMinMs <= debounceMaxMs is a rule between two options: 0 and a million free
    # each one's own bounds from the other's default
    base = InklingOptions().merged({"server": {"debounceMinMs": 0, "debounceMaxMs": 10**6}})
    try:
        base.merged({section: {name: value}})
    except OptionError:
        return False
    return True


def test_the_generated_files_are_up_to_date():
    run = subprocess.run([sys.executable, str(SCRIPT), "--check"], capture_output=True,
                         text=True, timeout=60)
    assert run.returncode == 0, run.stderr


def test_check_names_the_file_that_drifted(tmp_path, monkeypatch, capsys):
    for name in ("DOC", "MANIFEST", "NVIM_HELP"):
        copy = tmp_path / getattr(doc, name).name
        shutil.copy(getattr(doc, name), copy)
        monkeypatch.setattr(doc, name, copy)
    assert doc.main(["--check"]) == 0
    manifest = json.loads(doc.MANIFEST.read_text())
    manifest["contributes"]["configuration"][1]["properties"]["inkling.model.path"]["default"] = "x"
    doc.MANIFEST.write_text(json.dumps(manifest, indent=2) + "\n")
    assert doc.main(["--check"]) == 1
    assert "package.json" in capsys.readouterr().err
    assert doc.main([]) == 0 and doc.main(["--check"]) == 0      # written again


def test_every_option_has_one_line_of_help_a_group_and_its_values():
    fields = [f for s in dataclasses.fields(InklingOptions)
              for f in dataclasses.fields(s.default_factory())]
    assert len(OPTIONS) == len(fields) > 0          # every field of the tree is an option
    for o in OPTIONS:
        assert o.about["group"] in GROUPS, o.key
        assert "\n" not in o.help and o.help.endswith(".") and len(o.help) <= 140, o.key
        assert not re.search(r"issue \d|\.\./shared", o.help + json.dumps(o.values)), o.key
        if o.key in CHOICES:
            assert tuple(o.values) == CHOICES[o.key], o.key
        for value in o.values:
            assert _accepts(o.key, value), (o.key, value)
        if o.values:
            assert not _accepts(o.key, "no-such-value"), o.key
    assert {o.key for o in OPTIONS if o.enum} | {"model.device"} == set(CHOICES)


def test_the_documented_bounds_are_the_validations():
    for o in OPTIONS:
        if o.kind not in ("integer", "number"):
            assert not {"minimum", "maximum", "exclusiveMinimum"} & set(o.about), o.key
            continue
        step = 1 if o.kind == "integer" else 1e-6
        low, high, above = (o.about.get(b) for b in ("minimum", "maximum", "exclusiveMinimum"))
        assert (low is None) != (above is None), f"{o.key}: one lower bound"
        if low is not None:
            assert _accepts(o.key, low) and not _accepts(o.key, low - step), o.key
        if above is not None:
            assert not _accepts(o.key, above) and _accepts(o.key, above + 0.01), o.key
        if high is not None:
            assert _accepts(o.key, high) and not _accepts(o.key, high + step), o.key
        else:
            assert _accepts(o.key, 10_000), o.key


def test_every_server_option_is_a_vscode_setting_with_its_default_enum_and_description():
    props = _properties()
    for o in OPTIONS:
        p = props[o.key]
        assert p["type"] == o.kind and p["default"] == o.default, o.key
        assert p.get("enum", []) == o.enum, o.key
        assert p.get("enumDescriptions", []) == [o.values[v] for v in o.enum], o.key
        text = p["markdownDescription"]
        assert text == o.help if not o.values or o.enum else text.startswith(o.help), o.key
        assert all(f"`{v}`" in text for v in o.values if not o.enum), o.key
        for bound in ("minimum", "maximum", "exclusiveMinimum"):
            assert p.get(bound) == o.about.get(bound), (o.key, bound)
        assert ("advanced" in p.get("tags", [])) == o.advanced, o.key
    assert set(props) - {o.key for o in OPTIONS} == CLIENT


def test_vscode_settings_are_grouped_ordered_and_one_line_each():
    manifest = json.loads(MANIFEST.read_text())
    sections = manifest["contributes"]["configuration"]
    titles = [s["title"] for s in sections]
    assert titles == ["Editor", *[t for t in GROUPS.values() if t != "Server"],
                      "Advanced (measurement and troubleshooting)"], titles
    assert [s["order"] for s in sections] == list(range(1, len(sections) + 1))
    for s in sections:
        assert [p["order"] for p in s["properties"].values()] == \
            list(range(1, len(s["properties"]) + 1)), s["title"]
        advanced = s["title"].startswith("Advanced")
        for key, p in s["properties"].items():
            text = p.get("markdownDescription") or p["description"]
            assert "\n" not in text and len(text) <= 320, key
            assert ("advanced" in p.get("tags", [])) == advanced, key
            if "enum" in p:
                assert len(p["enumDescriptions"]) == len(p["enum"]), key
    everyday = sum(len(s["properties"]) for s in sections[:-1])
    assert everyday <= 20, f"{everyday} settings outside the advanced section"
    # the client attaches to what the bundled model knows; other languages by the setting
    assert _properties()["languages"]["default"] == ["python"]
    assert manifest["activationEvents"] == ["onLanguage"]


def test_the_neovim_help_names_every_option_with_its_default():
    text = NVIM_HELP.read_text()
    assert "*inkling-options*" in text and "|inkling-options|" in text
    for o in OPTIONS:
        assert f"  {o.key} = {doc.lua(o.default)}\n" in text, o.key


def test_the_configuration_doc_names_every_option_and_client_setting():
    text = DOC.read_text()
    for o in OPTIONS:
        assert f"| `{o.key}` | {o.kind} | `{json.dumps(o.default)}` |" in text, o.key
    for key in CLIENT:
        assert f"`inkling.{key}`" in text, key
    for title in GROUPS.values():
        assert f"## {title}\n" in text, title
    assert not re.search(r"issue \d|#\d{2}\b|\.\./shared", text)


@pytest.mark.parametrize("path", [MANIFEST, NVIM_HELP, DOC], ids=lambda p: p.name)
def test_no_generated_file_points_outside_the_project(path):
    assert "../shared" not in path.read_text()
