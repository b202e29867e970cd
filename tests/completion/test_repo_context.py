"""Issue 26: the repository-context block before the fill-in-the-middle prompt (imported
definitions and similar chunks of recent files), its format, its cost to the cache."""
import json
import random
from pathlib import Path

import pytest
import torch

from inkling.cache.prompt_cache import PromptCache
from inkling.completion.prompt.context_block import Snippet, assemble, render
from inkling.completion.document import Position
from inkling.completion.engine import Engine
from inkling.completion.errors import OptionError
from inkling.completion.options import InklingOptions
from inkling.completion.prompt.builder import build_prompt, prompt_room
from inkling.completion.prompt.recent_files import RecentFiles
from inkling.completion.prompt.repo_format import DEEPSEEK, INKLING, QWEN, repo_format

SHAPES = '''"""Shapes."""
MAX_SIDES = 12


class Polygon:
    sides = 3

    def __init__(self, name, sides=3):
        self.name = name

    def area(self):
        return 0.0


def make_square(side: float) -> "Polygon":
    """A square."""
    return Polygon("square", 4)


def _private():
    return 1
'''
UNITS = '''def to_metres(feet):
    return feet * 0.3048
'''
MAIN = '''from pkg.shapes import Polygon, make_square
from pkg import units


def build():
    p = Polygon("tri")
    n = units.to_metres(3)
    return '''


def _workspace(tmp_path: Path) -> Path:
    root = (tmp_path / "ws").resolve()
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "shapes.py").write_text(SHAPES)
    (root / "pkg" / "units.py").write_text(UNITS)
    return root


def _engine(runtime, root: Path, mode: str = "both", **completion) -> Engine:
    options = InklingOptions().merged({"completion": {
        "context": mode, "datastore": "none", "draft": "none", "monitor": "off",
        "maxNewTokens": 4, **completion}})
    engine = Engine(options, runtime)
    engine.workspace_folders = [root.as_uri()]
    assert engine.editor.analysis.index.files() == []    # made now: the files below reach it
    for path in sorted(root.rglob("*.py")):
        engine.workspace_file_changed(str(path))
    return engine


def _block(engine: Engine, uri: str, text: str, runtime):
    """The block a completion at the end of ``text`` reads (the engine's budget for it)."""
    c = engine.options.completion
    budget = int(prompt_room(runtime, c.max_block_tokens) * c.context_share)
    return engine.repo_context.block(c.context, uri, text, len(text), runtime, budget,
                                     engine.editor.analysis)


def _end(text: str) -> Position:
    lines = text.split("\n")
    return Position(len(lines) - 1, len(lines[-1]))


def test_imported_definitions_make_the_block_with_paths(tiny_runtime, tmp_path):
    root = _workspace(tmp_path)
    engine = _engine(tiny_runtime, root, "imports")
    uri = (root / "main.py").as_uri()
    engine.open(uri, MAIN)
    block = _block(engine, uri, MAIN, tiny_runtime)
    sep = "<|file_sep|>"
    assert block.files == ("pkg/shapes.py", "pkg/units.py")        # the import order
    assert block.text.startswith(f"{sep}pkg/shapes.py\nclass Polygon:\n    sides = 3\n"
                                 "    def __init__(self, name, sides=3):\n    def area(self):\n"
                                 'def make_square(side: float) -> "Polygon":\n')
    assert f"{sep}pkg/units.py\ndef to_metres(feet):\n" in block.text
    assert block.text.endswith(f"{sep}main.py\n")          # the cursor's file, its prompt next
    assert "_private" not in block.text and "MAX_SIDES" not in block.text   # not imported
    assert block.ids[0] == tiny_runtime.token_id(sep)          # the special token itself
    assert tiny_runtime.decode(list(block.ids)) == block.text
    out = engine.complete(uri, _end(MAIN))
    assert out.context_tokens == len(block) and out.context_text == block.text
    engine.shutdown()


def test_the_block_goes_first_and_the_windows_make_room(tiny_runtime, tmp_path):
    root = _workspace(tmp_path)
    engine = _engine(tiny_runtime, root, "imports")
    uri = (root / "main.py").as_uri()
    engine.open(uri, MAIN)
    block = _block(engine, uri, MAIN, tiny_runtime)
    p = build_prompt(tiny_runtime, MAIN, "", (100, 30), "spm", 0.0, block.ids)
    assert p.ids[:p.context] == list(block.ids) and p.context == len(block)
    assert p.ids[p.context] == tiny_runtime.token_id("<|fim_prefix|>")
    healed = p.with_fim(tiny_runtime, "spm", p.prefix_ids[:-1])     # token healing keeps it
    assert healed.ids[:healed.context] == list(block.ids)
    front, end = p.edge_zones(tiny_runtime, "spm")                   # zones shift past it
    assert front[0] >= p.context and end[1] <= len(p.ids)
    engine.shutdown()


def test_order_is_stable_and_the_budget_is_kept(tiny_runtime):
    snippets = [Snippet(f"pkg/m{i}.py", f"def f{i}(a, b):\n    x_{i} = {i}\n" * 3, "imports",
                        rank=i / 10, order=(i, f"pkg/m{i}.py", 0)) for i in range(6)]
    snippets.append(Snippet("pkg/near.py", "def near():\n", "similar", 2.5, ("pkg/near.py", 0)))
    full = assemble(snippets, INKLING, "main.py", "", tiny_runtime, 10_000)
    shuffled = snippets[:]
    random.Random(1).shuffle(shuffled)
    assert assemble(shuffled, INKLING, "main.py", "", tiny_runtime, 10_000) == full
    assert full.files == ("pkg/near.py",) + tuple(f"pkg/m{i}.py" for i in range(6))
    for budget in (60, 90, 150):
        cut = assemble(snippets, INKLING, "main.py", "", tiny_runtime, budget)
        assert 0 < len(cut) <= budget
        imports = [f for f in cut.files if f != "pkg/near.py"]
        assert imports == [f"pkg/m{i}.py" for i in range(len(imports))]   # best ranked kept
        assert imports and cut.files[-len(imports):] == tuple(imports)      # in block order
        assert len(cut) < len(full)
    assert assemble(snippets, INKLING, "main.py", "", tiny_runtime, 8).ids == ()


def test_nearest_use_is_kept_when_the_budget_is_short(tiny_runtime, tmp_path):
    root = _workspace(tmp_path)
    text = MAIN + "1\n\n" + "".join(f"# filler line {i}\n" for i in range(80)) + \
        "def later():\n    return make_square(2)\n"
    engine = _engine(tiny_runtime, root, "imports", contextShare=0.05)
    uri = (root / "main.py").as_uri()
    engine.open(uri, text)
    at_end = engine.repo_context.block("imports", uri, text, len(text), tiny_runtime, 80,
                                       engine.editor.analysis)
    assert "def make_square" in at_end.text and "class Polygon" not in at_end.text
    engine.repo_context.forget(uri)
    at_top = engine.repo_context.block("imports", uri, text, len(MAIN), tiny_runtime, 80,
                                       engine.editor.analysis)
    assert "class Polygon" in at_top.text and "def make_square" not in at_top.text
    assert len(at_top) <= 80 and len(at_end) <= 80
    engine.shutdown()


def test_a_missing_module_gives_no_block_and_no_error(tiny_runtime, tmp_path):
    root = (tmp_path / "empty").resolve()
    root.mkdir()
    engine = _engine(tiny_runtime, root, "both")
    uri = (root / "main.py").as_uri()
    text = "from missing.module import thing\nimport os\n\n\ndef f():\n    return thing("
    engine.open(uri, text)
    out = engine.complete(uri, _end(text))
    assert out.context_tokens == 0 and out.context_text == ""
    off = _engine(tiny_runtime, root, "off")
    off.open(uri, text)
    assert off.complete(uri, _end(text)).prefill_tokens == out.prefill_tokens   # same prompt
    engine.shutdown()
    off.shutdown()


def test_similar_chunks_of_recent_files(tiny_runtime, tmp_path):
    recent = RecentFiles(capacity=2, chunk_lines=4)
    recent.touch("a", "pkg/a.py", lambda: "import os\n\n\ndef walk_tree(root_path):\n"
                 "    for entry in os.scandir(root_path):\n        yield entry\n")
    recent.touch("b", "pkg/b.py", lambda: "WIDTH = 3\nHEIGHT = 4\n")
    found = recent.similar("def list_tree(root_path):\n    entry = os.scandir(", "here", 3)
    assert [(c.path, c.start) for c in found] == [("pkg/a.py", 4), ("pkg/a.py", 0)]
    assert found[0].text.startswith("    for entry in os.scandir(root_path)")
    recent.touch("c", "pkg/c.py", lambda: "")              # the ring holds two files
    assert len(recent) == 2 and not recent.similar("root_path entry scandir", "here", 3)


def test_a_changed_block_is_one_more_spliced_edit(tiny_runtime):
    """The cache splices a changed block: only its new tokens run, the prompt after it is
    kept (shifted); after a refresh the logits are a cold prefill's."""
    rt = tiny_runtime
    before = "".join(f"value_{i} = compute({i}, 'row')\n" for i in range(30)) + "result = "
    a = assemble([Snippet("pkg/a.py", "def compute(n, label):\n", "imports", 0, (0, "a", 0))],
                 INKLING, "main.py", "", rt, 200)
    b = assemble([Snippet("pkg/a.py", "def compute(n, label, *, scale=1.0):\n", "imports", 0,
                          (0, "a", 0)),
                  Snippet("pkg/b.py", "ROWS = 30\n", "imports", 0.1, (1, "b", 0))],
                 INKLING, "main.py", "", rt, 200)
    pa = build_prompt(rt, before, "\n", (400, 40), "spm", 0.0, a.ids)
    pb = build_prompt(rt, before, "\n", (400, 40), "spm", 0.0, b.ids)
    assert pa.ids[pa.context:] == pb.ids[pb.context:] and pa.context != pb.context
    cache = PromptCache(rt, "pie", stale_threshold=0.95)
    cache.sync(pa.ids)
    spliced = cache.sync(pb.ids)
    changed = len(pb.ids) - len(pb.ids[pb.context:]) - 2        # at least the head is kept
    assert spliced.mode == "pie" and not spliced.refreshed
    assert spliced.prefilled <= changed and spliced.reused >= len(pb.ids) - pb.context
    cold = PromptCache(rt, "full").sync(pb.ids).logits
    assert torch.argmax(spliced.logits) == torch.argmax(cold) or \
        torch.nn.functional.cosine_similarity(spliced.logits, cold, dim=0) > 0.9
    assert cache.refresh() > 0                         # the kept tokens were stale
    again = cache.sync(pb.ids)
    assert again.prefilled == 1 and cache.ids == pb.ids
    assert torch.allclose(again.logits, cold, atol=1e-4)


def test_engine_splices_when_the_imports_change(tiny_runtime, tmp_path):
    root = _workspace(tmp_path)
    engine = _engine(tiny_runtime, root, "imports")
    uri = (root / "main.py").as_uri()
    text = "from pkg.shapes import Polygon\n\n\n" + "".join(
        f"row_{i} = Polygon('p{i}')\n" for i in range(40)) + "x = "
    engine.open(uri, text)
    first = engine.complete(uri, _end(text))
    engine.apply_change(uri, [_insert(0, "from pkg.units import to_metres\n")])
    text = engine.document(uri).text
    second = engine.complete(uri, _end(text))
    assert second.context_tokens > first.context_tokens
    assert second.reused_tokens > 300                     # the prompt after the block was kept
    assert second.prefill_tokens < second.context_tokens + 40
    engine.shutdown()


def test_imports_that_vanish_for_a_keystroke_keep_the_block(tiny_runtime, tmp_path):
    """Retyping an import line (or a keystroke that breaks the parse) takes the imported
    definitions away and brings them back: the block stays the same object all along,
    so the cache keeps it and what follows; a definition that is new rebuilds it."""
    root = _workspace(tmp_path)
    engine = _engine(tiny_runtime, root, "imports")
    uri = (root / "main.py").as_uri()
    engine.open(uri, MAIN)
    first = _block(engine, uri, MAIN, tiny_runtime)
    assert first.files == ("pkg/shapes.py", "pkg/units.py")
    for text in (MAIN.replace("from pkg import units\n", "from pkg imp\n"),    # mid-line
                 MAIN.replace("from pkg import units\n", ""),                    # gone
                 MAIN.replace("def build():", "def build(:"),                      # no parse
                 MAIN):                                                           # back
        engine.apply_change(uri, [_whole(engine.document(uri).text, text)])
        assert _block(engine, uri, text, tiny_runtime) is first, text
    grown = MAIN.replace("from pkg.shapes import Polygon, make_square",
                         "from pkg.shapes import Polygon, make_square, MAX_SIDES")
    engine.apply_change(uri, [_whole(engine.document(uri).text, grown)])
    again = _block(engine, uri, grown, tiny_runtime)
    assert again is not first and "MAX_SIDES = 12" in again.text
    engine.shutdown()


def _whole(old: str, new: str):
    from inkling.completion.document import Range, TextChange
    lines = old.split("\n")
    return TextChange(new, Range(Position(0, 0), Position(len(lines) - 1, len(lines[-1]))))


def _insert(line: int, text: str):
    from inkling.completion.document import TextChange
    from inkling.completion.document import Range
    return TextChange(text, Range(Position(line, 0), Position(line, 0)))


def test_formats_of_other_families(tiny_runtime):
    assert repo_format(tiny_runtime) == INKLING
    assert DEEPSEEK.file_ids("pkg/a.py", "x = 1\n", tiny_runtime) == \
        tiny_runtime.encode("#pkg/a.py\nx = 1\n")              # a comment line, no token
    assert not QWEN.available(tiny_runtime)                    # no <|repo_name|> here

    class NoRepo:                                              # Code Llama: none
        fim = type("F", (), {"family": "codellama"})()
    assert repo_format(NoRepo()) is None
    assert render([], INKLING, "main.py", "", tiny_runtime).ids == ()


def test_options_name_a_bad_value():
    with pytest.raises(OptionError, match="completion.context must be one of"):
        InklingOptions().merged({"completion": {"context": "everything"}})
    with pytest.raises(OptionError, match="completion.context_share"):
        InklingOptions().merged({"completion": {"contextShare": 0.9}})
    assert InklingOptions().completion.context == "off"


def test_replay_reports_context_tokens_and_a_sample_block(tiny_model_dir, tmp_path, capsys):
    from inkling.cli.main import main
    events = [{"kind": "header", "version": 1, "name": "ctx", "language": "python"},
              {"kind": "file", "path": "pkg/__init__.py", "text": ""},
              {"kind": "file", "path": "pkg/shapes.py", "text": SHAPES},
              {"kind": "open", "path": "main.py", "text": MAIN},
              {"kind": "complete", "path": "main.py", "position": {"line": 7, "character": 11},
               "expected": "p\n"}]
    trace = tmp_path / "ctx.jsonl"
    trace.write_text("\n".join(json.dumps(e) for e in events) + "\n")
    report = tmp_path / "r.html"
    code = main(["replay", str(trace), "--model", str(tiny_model_dir), "--datastore", "none",
                 "--draft", "none", "--compare", "completion.context=off,both", "--json", "-",
                 "--report", str(report)])
    out = json.loads(capsys.readouterr().out)
    assert code == 0, out["errors"]
    off, both = out["runs"]
    assert off["context_tokens"]["per_completion"] == 0
    assert both["context_tokens"]["per_completion"] > 0
    assert both["context_tokens"]["with_block"] == 1
    page = report.read_text()
    assert "Context block (a sample completion)" in page
    assert "&lt;|file_sep|&gt;pkg/shapes.py" in page


def test_retype_cli_root_and_workspace_files(tmp_path, capsys):
    from inkling.cli.main import main
    from inkling.evaluation.trace_file import read_trace
    root = _workspace(tmp_path)
    (root / "pkg" / "main.py").write_text(MAIN + "p\n")
    assert main(["trace", "retype", str(root / "pkg" / "shapes.py"), "--root", str(root),
                 "--workspace", str(root / "pkg" / "units.py"), str(root / "pkg" / "main.py"),
                 "--out", str(tmp_path / "t")]) == 0
    written = capsys.readouterr().out.split()
    assert [Path(p).name for p in written] == ["retype-pkg-shapes.jsonl"]
    files = [e.path for e in read_trace(written[0]).events if type(e).__name__ == "FileEvent"]
    assert files == ["pkg/main.py", "pkg/units.py"]
