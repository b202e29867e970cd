"""`inkling trace retype` and `inkling trace git`: traces that replay with every check passing."""
import hashlib
import json
import os
import subprocess
import sys

import pytest

from inkling.completion.options import InklingOptions
from inkling.cli.main import main
from inkling.evaluation.git_repo import Hunk, parse_hunks
from inkling.evaluation.replay import Replayer
from inkling.evaluation.retype_trace import RetypeError, RetypeOptions, function_bodies, retype_trace
from inkling.evaluation.syntax_check import SyntaxChecker
from inkling.evaluation.trace_builder import TraceBuilder, split_lines, typing_chunks
from inkling.evaluation.trace_file import (AcceptEvent, CheckEvent, CompleteEvent, Header, dump_trace,
                                    event_json, read_trace)
from inkling.models.corpus import stdlib_root

SOURCE = '''"""A module with non-BMP text: 😀."""
import os


def greet(name):
    """Say hello 🐍."""
    message = f"hello {name} 😀"
    if name:
        return message
    return "nobody"


class Box:
    def __init__(self, items=()):
        self.items = list(items)

    @property
    def size(self):
        return len(self.items)

    def one_liner(self): return 1


async def fetch(path):
    # a comment before the first statement
    data = os.path.basename(path)

    return data
'''


@pytest.fixture(scope="module")
def replayer(tiny_model_dir, tiny_runtime):
    options = InklingOptions().merged({
        "model": {"path": str(tiny_model_dir), "device": "cpu", "dtype": "float32"},
        "completion": {"max_new_tokens": 2, "max_block_tokens": 2}})
    return Replayer(options, tiny_runtime, SyntaxChecker())


def test_split_lines_and_chunks():
    import random
    assert split_lines("a\r\nb\n\nc") == ["a\r\n", "b\n", "\n", "c"]
    assert split_lines("x\x0cy\u2028z\n") == ["x\x0cy\u2028z\n"]
    text = "return self.items[sku]  # 😀"
    assert "".join(typing_chunks(text, random.Random(1))) == text


def test_builder_positions_are_utf16():
    b = TraceBuilder(Header("t", "python"))
    b.open("a.py", "s = '😀'\n")
    b.insert("a.py", 6, "x")                  # after the emoji: UTF-16 column 7
    change = b.events[-1].changes[0]
    assert (change.range.start.line, change.range.start.character) == (0, 7)
    b.complete("a.py", 7, "'")
    assert b.events[-1].position.character == 8
    with pytest.raises(ValueError, match="outside the document"):
        b.delete("a.py", 3, 99)


def test_function_bodies():
    spans = function_bodies(SOURCE)
    assert [s.name for s in spans] == ["greet", "__init__", "size", "fetch"]
    size = spans[2]
    assert SOURCE[size.header_start:].startswith("    @property")
    assert SOURCE[size.start:size.end] == "        return len(self.items)\n"
    assert SOURCE[spans[3].start:spans[3].end].startswith("    data = ")
    with pytest.raises(RetypeError, match="bad.py: not valid Python"):
        function_bodies("def f(:\n", "bad.py")


def test_retype_trace_shape_and_determinism():
    b = retype_trace("pkg/mod.py", SOURCE, {"pkg/mod.py": SOURCE, "pkg/other.py": "X = 1\n"},
                     RetypeOptions(seed=3, max_functions=0))
    assert b.header.name == "retype-pkg-mod.py" and b.header.language == "python"
    kinds = [type(e).__name__ for e in b.events]
    assert kinds[:2] == ["FileEvent", "OpenEvent"] and kinds[-1] == "CloseEvent"
    completes = [e for e in b.events if isinstance(e, CompleteEvent)]
    assert completes[0].expected.startswith('"""Say hello 🐍."""\n    message = f"hello')
    assert any(e.expected == "return data\n" for e in completes)
    checks = [e for e in b.events if isinstance(e, CheckEvent)]
    assert checks[-1].sha256 == hashlib.sha256(SOURCE.encode()).hexdigest()
    assert len(checks) >= 8                    # after each note added and each body retyped
    again = retype_trace("pkg/mod.py", SOURCE, {"pkg/mod.py": SOURCE, "pkg/other.py": "X = 1\n"},
                         RetypeOptions(seed=3, max_functions=0))
    assert dump_trace(b.header, b.events) == dump_trace(again.header, again.events)


def test_retype_writes_an_accept_after_each_completion():
    """Every completion of a retype trace has a first line to type, so each is followed by
    an accept of the first draft (taken at replay when its first line is that one)."""
    b = retype_trace("pkg/mod.py", SOURCE, {}, RetypeOptions(seed=3, max_functions=0))
    events = list(b.events)
    completes = [i for i, e in enumerate(events) if isinstance(e, CompleteEvent)]
    accepts = [i for i, e in enumerate(events) if isinstance(e, AcceptEvent)]
    assert completes and [i + 1 for i in completes] == accepts
    assert all(events[i] == AcceptEvent("pkg/mod.py", 0) for i in accepts)
    plain = retype_trace("pkg/mod.py", SOURCE, {},
                         RetypeOptions(seed=3, max_functions=0, accept=False))
    assert [e for e in b.events if not isinstance(e, AcceptEvent)] == list(plain.events)
    # a completion whose expected first line is blank gets no accept
    tb = TraceBuilder(Header("t", "python"))
    tb.open("a.py", "x\n")
    tb.complete("a.py", 0, "\ny = 1\n", accept=True)
    tb.complete("a.py", 0, "  \r\n", accept=True)
    tb.complete("a.py", 0, "y = 1", accept=True)
    assert [type(e).__name__ for e in tb.events] == ["OpenEvent", "CompleteEvent",
                                                     "CompleteEvent", "CompleteEvent",
                                                     "AcceptEvent"]


def test_retype_traces_replay_in_sync(replayer, tmp_path):
    crlf = SOURCE.replace("\n", "\r\n")
    for name, text in (("mod.py", SOURCE), ("crlf.py", crlf)):
        b = retype_trace(name, text, {}, RetypeOptions(max_functions=0))
        trace = read_trace(b.write(tmp_path / f"{name}.jsonl"))
        result = replayer.replay(trace)
        assert result.sync_ok, result.failures
        assert result.checks >= 8 and len(result.completions) >= 9
        assert result.accepts == len(result.completions)       # one after each
        assert result.accepted == sum(r.first.strip() != "" and r.first.split("\n")[0].rstrip()
                                      == r.expected.split("\n")[0].rstrip()
                                      for r in result.completions)


def test_retype_cli_on_a_stdlib_file_replays_in_sync(replayer, tmp_path, capsys):
    files = [str(stdlib_root() / "colorsys.py"), str(stdlib_root() / "bisect.py")]
    assert main(["trace", "retype", *files, "--out", str(tmp_path / "plain"),
                 "--max-functions", "2", "--no-accept"]) == 0
    capsys.readouterr()
    assert main(["trace", "retype", *files, "--out", str(tmp_path), "--max-functions", "2"]) == 0
    written = capsys.readouterr().out.split()
    assert sorted(os.path.basename(p) for p in written) == ["retype-bisect.jsonl",
                                                           "retype-colorsys.jsonl"]
    trace = read_trace(tmp_path / "retype-colorsys.jsonl")
    assert [e.path for e in trace.events[:1]] == ["bisect.py"]     # the workspace
    plain = read_trace(tmp_path / "plain" / "retype-colorsys.jsonl")
    assert any(isinstance(e, AcceptEvent) for e in trace.events)
    assert [event_json(e) for e in plain.events] == [
        event_json(e) for e in trace.events if not isinstance(e, AcceptEvent)]
    result = replayer.replay(trace)
    assert result.sync_ok, result.failures
    assert result.completions and result.checks >= 3


def test_parse_hunks():
    diff = b"diff --git a/x b/x\n@@ -3 +3,2 @@ def f\n-a\n+b\n+c\n@@ -10,0 +12 @@\n+d\n"
    assert parse_hunks(diff) == [Hunk(3, 1, 3, 2), Hunk(10, 0, 12, 1)]
    assert Hunk(10, 0, 12, 1).old_index == 10 and Hunk(3, 1, 3, 2).old_index == 2


def git(repo, *args):
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.com",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.com")
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=True, env=env).stdout.strip()


def commit(repo, files: dict, message: str) -> str:
    for path, text in files.items():
        target = repo / path
        if text is None:
            target.unlink()
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(text.encode("utf-8") if isinstance(text, str) else text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


@pytest.fixture
def small_repo(tmp_path):
    repo = tmp_path / "demo"
    repo.mkdir()
    git(repo, "init", "-q")
    first = commit(repo, {
        "pkg/calc.py": "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n",
        "pkg/util.py": "X = 1\n", "README.md": "demo\n",
        "pkg/win.py": "def w():\r\n    return 1\r\n"}, "first")
    commit(repo, {
        "pkg/calc.py": "import math\n\n\ndef add(a, b):\n    # 😀 sum\n    return a + b\n\n\n"
                       "def mul(a, b):\n    return a * b\n",
        "pkg/new.py": "def f():\n    return 'no newline at the end'",
        "pkg/win.py": "def w():\r\n    return 2\r\n\r\ndef v():\r\n    pass\r\n",
        "data.bin": b"\x00\x01binary", "README.md": "demo, changed\n"}, "second")
    commit(repo, {"pkg/new.py": "def f():\n    return 'now with one'\n\n\ndef g():\n    pass\n",
                  "pkg/util.py": None}, "third")
    return repo, first


def test_git_traces_replay_in_sync(small_repo, tmp_path, replayer, capsys):
    repo, first = small_repo
    out = tmp_path / "traces"
    assert main(["trace", "git", str(repo), "--since", first, "--out", str(out)]) == 0
    written = sorted(capsys.readouterr().out.split())
    assert len(written) == 2
    traces = [read_trace(p) for p in written]
    second = traces[0]
    assert second.header.name.startswith("git-demo-0001-")
    opened = [e.path for e in second.events if type(e).__name__ == "OpenEvent"]
    assert opened == ["pkg/calc.py", "pkg/new.py", "pkg/win.py"]    # .py files only
    assert [e.path for e in second.events if type(e).__name__ == "FileEvent"] == ["pkg/util.py"]
    completes = [e for e in second.events if isinstance(e, CompleteEvent)]
    assert any(e.expected.startswith("import math\n") for e in completes)
    assert any(e.expected == "return 'no newline at the end'" for e in completes)
    assert sum(isinstance(e, AcceptEvent) for e in second.events) == len(completes)
    for trace in traces:
        result = replayer.replay(trace)
        assert result.sync_ok, result.failures
        assert result.checks == sum(isinstance(e, CheckEvent) for e in trace.events) >= 1


def test_git_errors_are_one_line(small_repo, tmp_path):
    repo, _ = small_repo
    proc = subprocess.run([sys.executable, "-m", "inkling.cli.main", "trace", "git", str(repo),
                           "--since", "nope", "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "unknown revision 'nope'" in proc.stderr and len(proc.stderr.splitlines()) == 1


def test_malformed_trace_is_one_line_per_problem(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"kind": "header", "version": 1, "name": "b",
                               "language": "python"}) + "\n{oops\n")
    proc = subprocess.run([sys.executable, "-m", "inkling.cli.main", "replay", str(bad),
                           "--json", "-"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert proc.stderr.strip() == f"inkling: {bad}:2: malformed JSON (Expecting property name " \
        "enclosed in double quotes at column 2)"
    report = json.loads(proc.stdout)
    assert report["sync_ok"] is False and report["traces"] == 1
