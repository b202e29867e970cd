"""The VS Code extension (editors/vscode): compiles, passes its unit tests, and drives the
real server and the scripted one.

The Node tests run only where its node_modules are installed (`npm ci` in editors/vscode);
CI does that in .ci/run, which also runs the npm steps and builds the .vsix itself. They
load the compiled extension under Node with a stand-in for the `vscode` module
(editors/vscode/test-integration/fake-vscode.js), which records what the extension registers
and shows. The extension in a real VS Code (code-server in headless Chromium) is
tests/editors/test_vscode_e2e.py.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

EXTENSION = Path(__file__).resolve().parents[2] / "editors" / "vscode"
NPM = shutil.which("npm")
NODE = shutil.which("node")

needs_node_modules = pytest.mark.skipif(
    NPM is None or not (EXTENSION / "node_modules" / "vscode-languageclient").is_dir(),
    reason="npm or editors/vscode/node_modules is missing (run npm ci in editors/vscode)")

def _npm(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([NPM, *args], cwd=EXTENSION, capture_output=True, text=True,
                          timeout=300)


@pytest.mark.slow
@needs_node_modules
def test_extension_compiles_and_its_unit_tests_pass():
    compiled = _npm("run", "compile")
    assert compiled.returncode == 0, compiled.stdout + compiled.stderr
    tested = _npm("test")
    out = tested.stdout + tested.stderr
    assert tested.returncode == 0, out
    assert "# fail 0" in out and "# pass " in out, out


def _properties() -> dict:
    """package.json's settings, from every section of ``contributes.configuration``."""
    sections = json.loads((EXTENSION / "package.json").read_text())["contributes"]["configuration"]
    return {key: prop for section in sections for key, prop in section["properties"].items()}


# The server's settings (defaults, enums, descriptions) against the options tree:
# tests/test_configuration_doc.py.


def test_package_manifest_needs_no_prompts():
    """vsce packages without asking: license, repository, publisher, engine and a LICENSE;
    the commands and keys (accept-line among them) and copilot's setting shapes."""
    pkg = json.loads((EXTENSION / "package.json").read_text())
    assert pkg["license"] and pkg["repository"] and pkg["publisher"]
    assert pkg["engines"]["vscode"]
    assert (EXTENSION / "LICENSE").is_file() and (EXTENSION / "README.md").is_file()
    assert (EXTENSION / "package-lock.json").is_file()
    commands = {c["command"] for c in pkg["contributes"]["commands"]}
    assert {"inkling.toggle", "inkling.showStats", "inkling.restart"} <= commands
    bound = {k["command"] for k in pkg["contributes"]["keybindings"]}
    assert {"editor.action.inlineSuggest.showNext",
            "editor.action.inlineSuggest.showPrevious",
            "editor.action.inlineSuggest.acceptNextLine",       # accept-line
            "editor.action.inlineSuggest.trigger"} <= bound
    assert {"inkling.toggleLanguage", "inkling.toggleFile",
            "inkling.toggleTriggerMode"} <= commands
    props = _properties()
    assert props["inkling.triggerMode"]["default"] == "automatic"
    assert "object" in props["inkling.enable"]["type"]      # copilot's per-language form
    assert pkg["scripts"]["package"] == "vsce package"      # npm run package: the .vsix


@pytest.mark.slow
@needs_node_modules
def test_npm_run_package_writes_the_vsix(tmp_path):
    """The documented command builds the .vsix, and what it holds is the compiled extension
    with the grouped settings."""
    import zipfile
    vsix = tmp_path / "inkling.vsix"
    built = _npm("run", "package", "--", "--out", str(vsix))
    assert built.returncode == 0 and vsix.is_file(), built.stdout + built.stderr
    with zipfile.ZipFile(vsix) as z:
        names = set(z.namelist())
        manifest = json.loads(z.read("extension/package.json"))
    assert {"extension/out/extension.js", "extension/out/settings.js"} <= names
    titles = [s["title"] for s in manifest["contributes"]["configuration"]]
    assert titles[0] == "Editor" and titles[-1].startswith("Advanced"), titles


@pytest.mark.slow
@needs_node_modules
def test_extension_drives_the_real_server(tmp_path, request):
    """With no settings the server holds the options of `inkling serve` with none (stats);
    the user sets the branches decoder; an invoked inline completion with several drafts and
    the server's word on how many came back; the accept command reaching the server
    (stats); settings sent again on change; toggle off keeps the server."""
    import dataclasses

    from inkling.completion.options import InklingOptions
    from inkling.models import BUNDLED_MODEL_DIR
    settings, tree = {}, {}
    if not (BUNDLED_MODEL_DIR / "config.json").is_file():
        model = str(request.getfixturevalue("tiny_model_dir"))
        settings["inkling.model.path"], tree = model, {"model": {"path": model}}
    compiled = _npm("run", "compile")
    assert compiled.returncode == 0, compiled.stdout + compiled.stderr
    env = {**os.environ, "OMP_NUM_THREADS": "1",
           "INKLING_TEST_SERVER": json.dumps([sys.executable, "-m", "inkling.cli.main", "serve"]),
           "INKLING_TEST_OPTIONS": json.dumps(settings),
           "INKLING_TEST_DEFAULTS": json.dumps(dataclasses.asdict(
               InklingOptions().merged(tree)))}
    run = subprocess.run([NODE, "--test", "test-integration/real-server.test.js"], cwd=EXTENSION,
                         env=env, capture_output=True, text=True, timeout=240)
    out = run.stdout + run.stderr
    assert run.returncode == 0 and "# pass 1" in out, out


@pytest.mark.slow
@needs_node_modules
def test_extension_with_the_scripted_server():
    """Defects 1 (only settings the user set are sent), 7 (toggling keeps the server), 8 (a
    restart on purpose logs no error) and 10 (a newline typed along the ghost text keeps the
    rest), the per-language and per-file switches and the manual trigger mode, with
    tests/editors/editor_fake_server.py."""
    compiled = _npm("run", "compile")
    assert compiled.returncode == 0, compiled.stdout + compiled.stderr
    env = {**os.environ, "INKLING_TEST_PYTHON": sys.executable}
    run = subprocess.run([NODE, "--test", "test-integration/scripted-server.test.js"],
                         cwd=EXTENSION, env=env, capture_output=True, text=True, timeout=240)
    out = run.stdout + run.stderr
    assert run.returncode == 0 and "# pass 5" in out and "# fail 0" in out, out
