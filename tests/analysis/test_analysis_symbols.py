"""What the symbol index knows per file and per workspace."""
from __future__ import annotations

from pathlib import Path

from inkling.analysis.grammars import Grammars
from inkling.analysis.python_symbols import PythonSymbolExtractor
from inkling.analysis.symbol_index import SymbolIndex
from inkling.analysis.analysis_options import AnalysisOptions

from analysis_helpers import analysis_for, write_tree

SOURCE = '''"""Doc."""
import os.path
import collections as col
from . import sibling
from ..pkg.mod import (thing as other, more)
from typing import *
__all__ = ["Shape", "area"]
try:
    import json
except ImportError:
    json = None
LIMIT: int = 10
a, (b, c) = 1, (2, 3)
for loop_var in range(3):
    pass
with open("f") as handle:
    pass


def area(width, height=1, /, scale=1.0, *args, unit="m", **extra):
    global COUNTER
    COUNTER = 1
    local_only = 2
    return width


class Shape(Base, mod.Mixin, Generic[T]):
    sides = 0
    label: str
    __slots__ = ("_cache",)

    def __init__(self, name, *, color="red"):
        self.name = name
        self.dims, self.origin = (1, 2), (0, 0)
        for self.cursor in range(2):
            pass

    @classmethod
    def make(cls):
        cls.instances = 1
        return cls("x")

    @staticmethod
    def helper(value):
        value.not_a_member = 1

    def later(self):
        def inner():
            self.deep = 1
        self.count += 1

    class Nested:
        inner_attr = 1
'''


def _extract(text: str, module: str = "pkg.mod"):
    lang = Grammars().language("python")
    from tree_sitter import Parser
    root = Parser(lang).parse(text.encode()).root_node
    return PythonSymbolExtractor(lang).extract(root, module)


def test_module_level_names_imports_and_all():
    s = _extract(SOURCE)
    for name in ("os", "col", "sibling", "other", "more", "json", "LIMIT", "a", "b", "c",
                 "loop_var", "handle", "area", "Shape", "COUNTER", "__all__"):
        assert name in s.names, name
    assert "local_only" not in s.names
    assert s.imports["os"].module == "os" and s.imports["col"].module == "collections"
    assert s.imports["other"].module == "pkg.mod" and s.imports["other"].name == "thing"
    assert s.imports["other"].level == 2
    assert s.imports["sibling"].level == 1
    assert [b.module for b in s.star_imports] == ["typing"]
    assert s.exported == ("Shape", "area")
    assert "local_only" in s.all_names and "width" in s.all_names


def test_function_parameters():
    f = _extract(SOURCE).functions["area"]
    assert f.params == ("width", "height", "scale", "unit")
    assert f.positional_only == 2
    assert f.keyword_only == ("unit",)
    assert f.var_positional == "args" and f.var_keyword == "extra"
    assert f.keyword_names() is None                       # **extra takes any keyword


def test_class_members_bases_and_self_attributes():
    c = _extract(SOURCE).classes["Shape"]
    assert c.bases == ("Base", "mod.Mixin", "Generic")
    for member in ("sides", "label", "_cache", "__init__", "make", "helper", "later", "Nested",
                   "name", "dims", "origin", "cursor", "instances", "deep", "count"):
        assert member in c.members, member
    assert "not_a_member" not in c.members
    assert c.methods["__init__"].keyword_names(bound_first=True) == {"name", "color"}
    assert c.methods["make"].decorators == ("classmethod",)
    assert c.classes["Nested"].members == {"inner_attr"}
    assert not c.dynamic


def test_dynamic_classes_and_modules_are_marked():
    s = _extract("class A:\n    def __getattr__(self, n):\n        return 1\n"
                 "class B(metaclass=Weird):\n    pass\n"
                 "class C:\n    def f(self):\n        setattr(self, 'x', 1)\n"
                 "class D:\n    def f(self):\n        return len(self.__dict__)\n"
                 "globals().update(x=1)\n")
    assert s.classes["A"].dynamic and s.classes["B"].dynamic and s.classes["C"].dynamic
    assert not s.classes["D"].dynamic
    assert s.dynamic


def test_workspace_index_names_modules_and_honours_gitignore(tmp_path: Path):
    write_tree(tmp_path, {
        ".gitignore": "build/\n*.gen.py\n/secret.py\n",
        "app/__init__.py": "",
        "app/core.py": "def run():\n    pass\n",
        "app/out.gen.py": "GENERATED = 1\n",
        "build/lib.py": "IGNORED = 1\n",
        "secret.py": "SECRET = 1\n",
        "src/tool/__init__.py": "TOOL = 1\n",
        "node_modules/x.py": "NODE = 1\n",
        ".hidden/h.py": "HIDDEN = 1\n",
    })
    (tmp_path / "blob.py").write_bytes(b"\x00\x01binary")
    (tmp_path / "huge.py").write_text("x = 1\n" * 300_000)
    a = analysis_for(tmp_path)
    files = {p.relative_to(tmp_path.resolve()).as_posix() for p in a.index.files()}
    assert files == {"app/__init__.py", "app/core.py", "src/tool/__init__.py"}
    assert a.index.module("app.core").functions["run"].params == ()
    assert a.index.module("tool").names == {"TOOL"}               # src/ layout
    assert a.index.module("src.tool") is not None
    assert {"run", "TOOL"} <= a.index.workspace_names()
    assert {"app", "tool", "os", "json"} <= a.index.top_level_modules()
    assert a.index.submodules("app") == {"core"}


def test_indexing_stops_at_the_file_budget(tmp_path: Path):
    write_tree(tmp_path, {f"m{i:02d}.py": f"V{i} = {i}\n" for i in range(30)})
    a = analysis_for(tmp_path, max_files=10)
    assert len(a.index.files()) == 10


def test_stdlib_modules_are_parsed_lazily_and_kept():
    index = SymbolIndex(AnalysisOptions())
    assert index.module("textwrap") is index.module("textwrap")
    assert "TextWrapper" in index.module("textwrap").classes
    assert "path" in index.module("os").names
    assert index.module("no_such_module_xyz") is None
    assert index.module("math").names >= {"sqrt", "pi"}          # a C module: introspected
    assert {"parse", "request"} <= index.submodules("urllib")


def test_open_documents_win_over_disk(tmp_path: Path):
    a = analysis_for(tmp_path, {"m.py": "ON_DISK = 1\n"})
    uri = (tmp_path / "m.py").as_uri()
    a.open(uri, "IN_EDITOR = 1\n")
    a.symbols(uri)
    assert a.index.module("m").names == {"IN_EDITOR"}
    a.change(uri, "IN_EDITOR = 1\nTYPED = 2\n")
    a.symbols(uri)
    assert a.index.module("m").names == {"IN_EDITOR", "TYPED"}
    a.close(uri)
    assert a.index.module("m").names == {"ON_DISK"}


def test_a_files_names_statement_by_statement_are_the_whole_files_query(monkeypatch):
    """``bound_names`` and the module's ``global`` names of a file come from each top-level
    statement's query, kept per statement text: after every edit (typing into a body, a new
    statement, a statement broken and mended, one deleted), and with a cache small enough to
    evict, they equal the one query over the whole file."""
    import random

    from tree_sitter import Parser

    from inkling.analysis import python_symbols
    lang = Grammars().language("python")
    parser, cached = Parser(lang), PythonSymbolExtractor(lang)
    monkeypatch.setattr(python_symbols, "STATEMENT_CACHE_BYTES", 600)

    def whole(root):
        return (cached._captured(cached._bindings, root), cached._captured(cached._globals, root))

    edits = ["x", "\n", "(", ")", "def typed(a, b):\n    return a\n", "", "global G\n",
             "    new_local = 1\n", ":", "lambda q: q"]
    for seed, step in ((seed, step) for seed in (3, 4, 5) for step in range(120)):
        if step == 0:
            text, g = SOURCE, random.Random(seed)
        at = g.randrange(len(text) + 1)
        if step % 3 == 2 and len(text) > 40:                     # a deletion
            text = text[:at] + text[at + g.randrange(1, 12):]
        else:
            text = text[:at] + g.choice(edits) + text[at:]
        root = parser.parse(text.encode()).root_node
        assert (cached.bound_names(root), cached._module_captured("globals", cached._globals, root)
                ) == whole(root), text
        assert cached.extract(root, "m").all_names == \
            PythonSymbolExtractor(lang).extract(root, "m").all_names


def test_the_workspace_names_stay_one_set_while_an_open_documents_names_do(tmp_path: Path):
    """An edit that binds no new module name (typing in a function body) keeps the
    workspace's names the same set, so what is built on them is kept; a new module-level
    name makes them again, with it."""
    a = analysis_for(tmp_path, {"m.py": "def f():\n    return 1\n", "other.py": "OTHER = 1\n"})
    uri = (tmp_path / "m.py").as_uri()
    a.open(uri, "def f():\n    return 1\n")
    a.symbols(uri)
    before = a.index.workspace_names()
    a.change(uri, "def f():\n    local = 2\n    return 1\n")
    a.symbols(uri)
    assert a.index.workspace_names() is before
    a.change(uri, "def f():\n    local = 2\n    return 1\nTYPED = 3\n")
    a.symbols(uri)
    assert "TYPED" in a.index.workspace_names() and "OTHER" in a.index.workspace_names()


def test_typing_along_a_line_reuses_the_enclosing_headers(monkeypatch):
    """Each keystroke of a line in a method gets the headers a fresh walk up the lines
    gets, from the document's kept answer while the text above the line and its level are
    the same; an edit above walks again."""
    import inspect
    import textwrap as tw
    from inkling.analysis import cursor_scope as cs
    source = inspect.getsource(tw)
    head = "    def _split(self, text):\n"
    at = source.index(head) + len(head)
    typed = "words = self.wordsep_re.split(text)"
    parser = Grammars().parser("python")
    kept, walks = cs.KeptHeaders(), []
    walk = cs._headers_above
    monkeypatch.setattr(cs, "_headers_above", lambda *a: walks.append(1) or walk(*a))
    for n in range(len(typed) + 1):
        text = source[:at] + "        " + typed[:n] + "\n" + source[at:]
        root = parser.parse(text.encode()).root_node
        got = cs.enclosing_headers(text, at + 8 + n, root, kept)
        assert got == cs.enclosing_headers(text, at + 8 + n, root)
        assert [(h.kind, h.name) for h in got] == [("class", "TextWrapper"), ("def", "_split")]
    assert len(walks) == 1 + len(typed) + 1          # one kept walk; each fresh one above
    rows = [h.row for h in got]
    edited = "# a comment\n" + text
    got = cs.enclosing_headers(edited, len("# a comment\n") + at + 8, None, kept)
    assert got == cs.enclosing_headers(edited, len("# a comment\n") + at + 8, None)
    assert [h.row for h in got] == [r + 1 for r in rows] and kept.headers == got
