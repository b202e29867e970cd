"""The replay's analysis metrics: undefined_names and identifier_match."""
from __future__ import annotations

from pathlib import Path

import pytest

from inkling.analysis.trigger_identifier import identifier_matches
from inkling.evaluation.replay_result import CompletionRecord, TraceResult, summarise

from analysis_helpers import analysis_for

FILES = {
    "app/__init__.py": "",
    "app/store.py": '''
import os


class Store:
    def __init__(self, root):
        self.root = root
        self.items = {}

    def add(self, key, value, *, overwrite=False):
        self.items[key] = value

    def load(self):
        |
''',
    "app/helpers.py": "def shared_helper():\n    return 1\n",
}


@pytest.fixture()
def store(tmp_path: Path):
    text = FILES["app/store.py"]
    files = dict(FILES, **{"app/store.py": text.replace("|", "pass")})
    a = analysis_for(tmp_path, files)
    uri = (tmp_path / "app/store.py").as_uri()
    a.open(uri, text.replace("|", ""))
    return a, uri, text.index("|")


@pytest.mark.parametrize("draft,undefined", [
    ("return self.items", []),
    ("return self.itemz", ["itemz"]),
    ("self.cache = {}", []),                              # defines a member
    ("return os.getcwd()", []),
    ("return os.getcwdz()", ["getcwdz"]),
    ("return len(self.root)", []),
    ("return undefined_thing + 1", ["undefined_thing"]),
    ("return shared_helper()", []),                       # defined in the workspace
    ("for k in self.items:\n            print(k)", []),
    ("return [v for v in self.items.values()]", []),
    ("x = made_up(", ["made_up"]),                        # a broken draft, but clearly called
    ("return self.add(1, 2, overwrite=True)", []),
    ("return Store.add", []),
    ("return Store.nope", ["nope"]),
    ("try:\n            pass\n        except OSError as err:\n            raise err", []),
    ("return f(1)", ["f"]),                     # a string prefix is no defined name
    ('return f"{self.root}"', []),
])
def test_undefined_names(store, draft, undefined):
    a, uri, offset = store
    assert a.undefined_names(uri, offset, draft) == undefined


def test_undefined_names_star_import_is_lenient(tmp_path: Path):
    a = analysis_for(tmp_path, {"m.py": "from somewhere_unknown import *\n"})
    uri = (tmp_path / "m.py").as_uri()
    a.open(uri, "from somewhere_unknown import *\n")
    assert a.undefined_names(uri, len("from somewhere_unknown import *\n"), "x = anything") == []


def test_undefined_names_not_measured_without_python(tmp_path: Path):
    a = analysis_for(tmp_path, {})
    a.open("file:///x.js", "let a = 1;\n", "javascript")
    assert a.undefined_names("file:///x.js", 0, "b") is None


@pytest.mark.parametrize("expected,trigger_end,name", [
    ("return self.items\n", len("return self."), "items"),
    ("x = os.path.join(self.root, 'a')\n", len("x = os."), "path"),
    ("self.add(1, 2, overwrite=True)\n", len("self.add(1, 2,"), "overwrite"),
    ("return Store(root=1)\n", len("return Store("), "root"),
    ("y = 1\n", None, None),
    ("y = unknown.attr\n", None, None),
])
def test_trigger_identifier(store, expected, trigger_end, name):
    a, uri, offset = store
    found = a.trigger_identifier(uri, offset, expected)
    if trigger_end is None:
        assert found is None
    else:
        assert (found.trigger_end, found.name) == (trigger_end, name)


def test_trigger_identifier_in_imports(tmp_path: Path):
    a = analysis_for(tmp_path, {"m.py": ""})
    uri = (tmp_path / "m.py").as_uri()
    a.open(uri, "")
    found = a.trigger_identifier(uri, 0, "from collections import OrderedDict\n")
    assert found.name == "collections" and found.kind == "from_module"
    a.change(uri, "from collections import ")
    found = a.trigger_identifier(uri, len("from collections import "), "OrderedDict\n")
    assert found.name == "OrderedDict" and found.kind == "from_import"
    a.change(uri, "")
    assert a.trigger_identifier(uri, 0, "import json\n").name == "json"


def test_identifier_matches(store):
    a, uri, offset = store
    found = a.trigger_identifier(uri, offset, "return self.items\n")
    assert identifier_matches("return self.items.copy()", "return self.items\n", found)
    assert not identifier_matches("return self.root", "return self.items\n", found)
    assert not identifier_matches("x = self.items", "return self.items\n", found)


def _rec(undefined, matched):
    return CompletionRecord(1, "a.py", "x", ("x",), 1.0, 1.0, 1.0, 1, 1, 1, 0, True,
                            undefined=undefined, identifier_match=matched)


def test_summary_of_the_analysis_metrics():
    t = TraceResult("t.jsonl", "t", completions=[
        _rec((), True), _rec(("nope",), False), _rec((), None), _rec(None, None)])
    s = summarise([t])
    assert s["undefined_names"] == pytest.approx(1 / 3, abs=1e-4)
    assert s["identifier_match"] == 0.5
    assert s["identifier_triggers"] == 2


def test_replay_reports_the_analysis_metrics(tiny_model_dir, tiny_runtime, monkeypatch):
    """With the Engine's drafts fixed, undefined_names and identifier_match are known."""
    import json

    from inkling.completion.engine import Completion, Draft, Engine
    from inkling.completion.options import InklingOptions
    from inkling.evaluation.replay import Replayer
    from inkling.evaluation.replay_result import replay_json
    from inkling.evaluation.syntax_check import SyntaxChecker
    from inkling.evaluation.trace_file import parse_trace

    drafts = {4: "return base.Shape.area", 5: "return base.Shap.area", 6: "x = 1"}

    def fake_complete(self, uri, position, k=None, trigger="automatic", cancelled=None):
        return Completion(uri, position, [Draft("d", drafts[position.line], -1.0, 2)], trigger)
    monkeypatch.setattr(Engine, "complete", fake_complete)
    text = "from pkg import base\n\n\ndef f():\n    \n    \n    \n"
    events = [
        {"kind": "header", "version": 1, "name": "names", "language": "python"},
        {"kind": "file", "path": "pkg/__init__.py", "text": ""},
        {"kind": "file", "path": "pkg/base.py",
         "text": "class Shape:\n    def area(self):\n        return 0\n"},
        {"kind": "open", "path": "m.py", "text": text},
        *({"kind": "complete", "path": "m.py", "position": {"line": line, "character": 4},
           "expected": "return base.Shape.area\n"} for line in (4, 5)),
        {"kind": "complete", "path": "m.py", "position": {"line": 6, "character": 4},
         "expected": "x = 2\n"},
    ]
    options = InklingOptions().merged({"model": {"path": str(tiny_model_dir), "device": "cpu"}})
    trace = parse_trace("".join(json.dumps(e) + "\n" for e in events), "names.jsonl")
    result = Replayer(options, tiny_runtime, SyntaxChecker()).replay(trace)
    assert not result.failures
    assert [r.undefined for r in result.completions] == [(), ("Shap",), ()]
    assert [r.identifier_match for r in result.completions] == [True, False, None]
    s = replay_json([result], {})
    assert s["undefined_names"] == pytest.approx(1 / 3, abs=1e-4)
    assert s["identifier_match"] == 0.5 and s["identifier_triggers"] == 2
