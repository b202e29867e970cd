"""Bad input degrades to "no constraint": never raises, never hangs."""
from __future__ import annotations

from pathlib import Path

from inkling.analysis.python_symbols import PythonSymbolExtractor

from analysis_helpers import allowed_at, analysis_for, open_at


def test_a_file_that_does_not_parse(tmp_path: Path):
    a = analysis_for(tmp_path, {"broken.py": "def (:\n  class ]]] \x0c\n  @@@ ::: '''\n",
                                "user.py": "import broken\n"})
    assert a.index.module("broken") is not None
    found = allowed_at(a, tmp_path / "user.py", "import broken\nx = broken.|")
    assert found is None or isinstance(found, frozenset)
    state = open_at(a, tmp_path / "broken.py", "def (:\n  class ]]] \n  self.|")
    assert state is None or state.mask() is None


def test_a_one_megabyte_file(tmp_path: Path, monkeypatch):
    body = "".join(f"def f{i}(a, b=1):\n    return a + b  # {'x' * 40}\n\n" for i in range(14_000))
    assert len(body) > 1_000_000
    a = analysis_for(tmp_path, {"big.py": body, "user.py": "import big\n"})
    extracted = []                                 # the files symbols were extracted from
    real = PythonSymbolExtractor.extract

    def extract(self, root, module, path="", *args, **kwargs):
        extracted.append(Path(path).name)
        return real(self, root, module, path, *args, **kwargs)
    monkeypatch.setattr(PythonSymbolExtractor, "extract", extract)
    state = open_at(a, tmp_path / "big.py", body + "\nclass K:\n    def g(self):\n"
                    "        return self.|")
    assert state is None or state.allowed is None             # too large for symbols
    assert "big.py" not in extracted                          # and none were extracted
    uri = (tmp_path / "big.py").as_uri()
    a.change(uri, a.text(uri) + "x = 1\n")                   # edits still parse
    assert a.tree(uri).root_node.end_byte == len(a.text(uri).encode())
    assert allowed_at(a, tmp_path / "user.py", "import big\nx = big.|") is None


def test_deeply_nested_code(tmp_path: Path):
    nested = "x = " + "(" * 3000 + "1" + ")" * 3000 + "\n"
    blocks = "".join("    " * i + "if x:\n" for i in range(300)) + "    " * 300 + "pass\n"
    lists = "y = " + "[" * 5000 + "\n"
    a = analysis_for(tmp_path, {"deep.py": nested + blocks + lists})
    assert a.index.module("deep") is not None
    state = open_at(a, tmp_path / "deep.py", nested + blocks + lists + "import os\nos.|")
    assert state is not None
    state.mask()


def test_a_class_that_inherits_from_itself(tmp_path: Path):
    text = "class Loop(Loop):\n    x = 1\n\n\nclass A(B):\n    pass\n\n\nclass B(A):\n" \
           "    def f(self):\n        return self.|"
    a = analysis_for(tmp_path, {"m.py": text.replace("|", "")})
    assert allowed_at(a, tmp_path / "m.py", text) is None
    assert allowed_at(a, tmp_path / "m.py", text.replace("return self.|", "") +
                      "\n\nx = Loop.|") is None


def test_import_cycles(tmp_path: Path):
    files = {"a.py": "from b import *\nfrom b import thing as thing\nA = 1\n",
             "b.py": "from a import *\nfrom a import thing\nB = 1\n",
             "c.py": "import c\nfrom c import *\n"}
    a = analysis_for(tmp_path, files)
    assert allowed_at(a, tmp_path / "c.py", "import a\nx = a.|") is None     # the cycle
    assert allowed_at(a, tmp_path / "c.py", "from a import |") is None
    for text in ("import c\nx = c.c.c.|", "from a import thing\nx = thing.|"):
        found = allowed_at(a, tmp_path / "c.py", text)
        assert found is None or isinstance(found, frozenset)


def test_unknown_documents_and_odd_offsets(tmp_path: Path):
    a = analysis_for(tmp_path, {"m.py": "x = 1\n"})
    assert a.monitor("file:///nowhere.py", 3) is None
    uri = (tmp_path / "m.py").as_uri()
    a.open(uri, "x = 1\n")
    a.monitor(uri, 10_000)                                  # past the end: no exception
    a.open("untitled:Untitled-1", "import os\nos.", "python")
    state = a.monitor("untitled:Untitled-1", len("import os\nos."))
    assert state is not None and "path" in state.allowed
    a.open("file:///x.cob", "DISPLAY 'x'.", "cobol")
    assert a.monitor("file:///x.cob", 3) is None
