"""The drafting suffix index as a Workspace subscriber: indexing rules, budgets, bad files;
one walk and one watcher feeding it and the symbol index together."""
import time
from pathlib import Path

import pytest

import inkling.analysis.workspace as workspace_module
from inkling.analysis import AnalysisOptions, CodeAnalysis
from inkling.analysis.workspace import Workspace, WorkspaceLimits
from inkling.completion.drafting.workspace_index import WorkspaceIndex


def encode(text):
    return [ord(c) % 251 for c in text]                     # a stand-in tokenizer


class Encoder:
    """encode_batch, counting its calls and the texts of each."""

    def __init__(self):
        self.calls: list[int] = []

    def __call__(self, texts):
        self.calls.append(len(texts))
        return [encode(t) for t in texts]


def _keys(index):
    return set(index.index._seqs)


def _drafting(root: Path, limits: WorkspaceLimits = WorkspaceLimits()):
    workspace, index = Workspace([root], limits), WorkspaceIndex(Encoder())
    workspace.subscribe(index)
    return workspace, index


def _both(root: Path):
    """A Workspace feeding a symbol index and a drafting index, walked once."""
    analysis = CodeAnalysis(AnalysisOptions())
    workspace, index = _drafting(root)
    workspace.subscribe(analysis.index)
    return workspace, index, analysis


def test_gitignore_binary_huge_and_hidden_are_skipped(tmp_path):
    (tmp_path / ".gitignore").write_text("build/\n*.log\n")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("def a():\n    return 1\n")
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "gen.py").write_text("x = 1\n")
    (tmp_path / "run.log").write_text("log\n")
    (tmp_path / "blob.bin").write_bytes(b"\x00\x01\x02")
    (tmp_path / "big.py").write_text("x" * 5000)
    (tmp_path / "latin.txt").write_bytes("caf\xe9\n".encode("latin-1"))
    (tmp_path / ".hidden").mkdir()
    (tmp_path / ".hidden" / "h.py").write_text("h = 1\n")
    (tmp_path / "loop").symlink_to(tmp_path)                # a symlink loop
    (tmp_path / "link.py").symlink_to(tmp_path / "src" / "a.py")
    workspace, ws = _drafting(tmp_path, WorkspaceLimits(max_file_bytes=4000))
    report = workspace.walk()
    assert _keys(ws) == {str(tmp_path / "src" / "a.py"), str(tmp_path / ".gitignore")}
    assert report.files == 2
    assert report.skipped["binary files"] == 1 and report.skipped["huge files"] == 1
    assert report.skipped["non-UTF-8 files"] == 1 and report.skipped["symlinks"] == 1
    assert report.skipped["ignored files"] >= 1 and "skipped" in report.summary()


def test_file_budget_is_kept_and_reported(tmp_path):
    for i in range(30):
        (tmp_path / f"f{i:02d}.py").write_text(f"v{i} = {i}\n")
    workspace, ws = _drafting(tmp_path, WorkspaceLimits(max_files=10))
    report = workspace.walk()
    assert report.files == 10 and report.skipped["files over the file budget"] == 20
    assert len(_keys(ws)) == 10


def test_byte_budget_is_kept_and_reported(tmp_path):
    for i in range(5):
        (tmp_path / f"f{i}.py").write_text("x" * 100)
    workspace, ws = _drafting(tmp_path, WorkspaceLimits(max_total_bytes=250))
    report = workspace.walk()
    assert report.files == 2 and report.skipped["files over the byte budget"] == 3


def test_files_are_tokenized_in_batches_and_progress_is_reported(tmp_path):
    for i in range(600):
        (tmp_path / f"f{i:03d}.py").write_text(f"v{i} = {i}\n")
    workspace, ws = _drafting(tmp_path)
    seen = []
    report = workspace.walk(lambda message, fraction: seen.append(fraction))
    assert report.files == 600 and len(_keys(ws)) == 600
    assert ws.encode_batch.calls == [256, 256, 88]          # a batch per call, not a file
    assert seen == sorted(seen) and seen[-1] == 1.0 and len(seen) >= 3


def test_unreadable_and_vanishing_files_do_not_stop_indexing(tmp_path):
    (tmp_path / "ok.py").write_text("ok = 1\n")
    (tmp_path / "gone.py").write_text("gone = 1\n")
    workspace, ws = _drafting(tmp_path)

    def vanish(message, fraction):                         # between listing and reading
        if (tmp_path / "gone.py").exists():
            (tmp_path / "gone.py").unlink()
    report = workspace.walk(vanish)
    assert report.files == 1 and report.skipped["vanished files"] == 1
    assert _keys(ws) == {str(tmp_path / "ok.py")}


def test_one_walk_reads_each_file_once_for_both_indexes(tmp_path, monkeypatch):
    (tmp_path / "lib.py").write_text("def helper_fn():\n    return 1\n")
    (tmp_path / "notes.md").write_text("helper notes\n")
    reads = []
    real = workspace_module.read_text
    monkeypatch.setattr(workspace_module, "read_text",
                        lambda path, limit: (reads.append(path.name), real(path, limit))[1])
    workspace, ws, analysis = _both(tmp_path)
    report = workspace.walk()
    assert sorted(reads) == ["lib.py", "notes.md"]           # one read each, for both
    assert report.files == 2
    assert _keys(ws) == {str(tmp_path / "lib.py"), str(tmp_path / "notes.md")}
    assert "helper_fn" in analysis.index.module("lib").functions   # Python only there
    assert analysis.index.files() == [tmp_path / "lib.py"]


def test_a_late_subscriber_catches_up_alone(tmp_path):
    (tmp_path / "lib.py").write_text("X = 1\n")
    workspace, ws = _drafting(tmp_path)
    workspace.walk()
    analysis = CodeAnalysis(AnalysisOptions())
    workspace.subscribe(analysis.index)
    calls = len(ws.encode_batch.calls)
    workspace.walk()
    assert analysis.index.module("lib").names == {"X"}
    assert len(ws.encode_batch.calls) == calls              # the drafting index not again
    assert workspace.walk().files == 0                      # nobody new: nothing read


def test_file_changed_updates_and_removes_in_both_indexes(tmp_path):
    f = tmp_path / "m.py"
    f.write_text("alpha = 1\n")
    workspace, ws, analysis = _both(tmp_path)
    workspace.walk()
    f.write_text("alpha = 1\nbeta_gamma_delta = 2\n")
    assert workspace.file_changed(f)
    assert ws.matches(encode("beta_gamma"))
    assert "beta_gamma_delta" in analysis.index.module("m").names
    (tmp_path / "new.py").write_text("fresh_name = 3\n")
    assert workspace.file_changed(str(tmp_path / "new.py"))
    assert analysis.index.module("new") is not None and str(tmp_path / "new.py") in _keys(ws)
    f.unlink()
    assert not workspace.file_changed(f)
    assert not ws.matches(encode("beta_gamma")) and str(f) not in _keys(ws)
    assert analysis.index.module("m") is None or analysis.index.module("m").path != str(f)
    assert f not in analysis.index.files()
    assert not workspace.file_changed(tmp_path.parent / "elsewhere.py")   # not the workspace's


def test_a_change_during_a_walk_is_not_undone_by_it(tmp_path):
    f = tmp_path / "m.py"
    f.write_text("old_text = 1\n")
    workspace, ws = _drafting(tmp_path)
    # the walk's copy is held until the walk is done; a change since replaces it
    ws.put_files([workspace_module.WorkspaceFile(f, "old_text = 1\n")])
    ws.file_changed(workspace_module.WorkspaceFile(f, "new_text = 2\n"))
    ws.walk_done()
    assert ws.matches(encode("new_text")) and not ws.matches(encode("old_text = 1"))


def test_folders_changed(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    (a / "one.py").write_text("one = 1\n")
    (b / "two.py").write_text("two = 2\n")
    workspace, ws = _drafting(a)
    workspace.walk()
    report = workspace.set_folders([b.as_uri()])
    assert report.files == 1 and _keys(ws) == {str(b / "two.py")}
    assert workspace.folders == [b.resolve()]


def _eventually(check, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.02)
    return check()


@pytest.mark.slow
def test_one_watcher_event_updates_both_indexes(tmp_path):
    f = tmp_path / "m.py"
    f.write_text("alpha = 1\n")
    workspace, ws, analysis = _both(tmp_path)
    workspace.walk()
    assert workspace.start()
    try:
        f.write_text("alpha = 1\nbeta_gamma_delta = 2\n")
        needle = encode("beta_gamma")
        assert _eventually(lambda: ws.matches(needle)
                           and "beta_gamma_delta" in analysis.index.module("m").names)
        f.unlink()
        assert _eventually(lambda: not ws.matches(needle)
                           and f not in analysis.index.files())
        assert str(f) not in _keys(ws)
        (tmp_path / "pkg").mkdir()
        (tmp_path / "pkg" / "made.py").write_text("made_here = 1\n")
        assert _eventually(lambda: analysis.index.module("pkg.made") is not None
                           and str(tmp_path / "pkg" / "made.py") in _keys(ws))
    finally:
        workspace.stop()


def test_the_engine_prepares_one_walk_for_both_and_follows_changes(tmp_path, tiny_runtime,
                                                                   monkeypatch):
    from inkling.completion.engine import Engine
    from inkling.completion.options import InklingOptions
    (tmp_path / "lib.py").write_text("def helper_fn():\n    return 1\n")
    (tmp_path / "notes.md").write_text("helper notes\n")
    reads = []
    real = workspace_module.read_text
    monkeypatch.setattr(workspace_module, "read_text",
                        lambda path, limit: (reads.append(path.name), real(path, limit))[1])
    options = InklingOptions().merged({"completion": {
        "draft": "suffix", "monitor": "on", "datastore": "none", "modelDatastore": "none"}})
    engine = Engine(options, tiny_runtime)
    engine.workspace_folders = [tmp_path.as_uri()]
    try:
        prepared = engine.prepare()
        assert not prepared.failed and sorted(reads) == ["lib.py", "notes.md"]
        drafting, symbols = engine.sources.workspace, engine.editor.analysis.index
        assert engine.workspace.subscribers == [symbols, drafting]
        assert _keys(drafting) == {str(tmp_path / "lib.py"), str(tmp_path / "notes.md")}
        assert "helper_fn" in symbols.module("lib").functions
        engine.prepare()
        assert len(reads) == 2                                  # prepared again: kept
        (tmp_path / "lib.py").write_text("def other_fn():\n    return 2\n")
        engine.workspace_file_changed(str(tmp_path / "lib.py"))
        assert "other_fn" in symbols.module("lib").functions
        assert any(m.length >= 3 for _, m in drafting.matches(tiny_runtime.encode("other_fn")))
        (tmp_path / "lib.py").unlink()
        engine.workspace_file_changed(str(tmp_path / "lib.py"))
        assert symbols.module("lib") is None and _keys(drafting) == {str(tmp_path / "notes.md")}
        (tmp_path / "watched.py").write_text("def seen_fn():\n    return 3\n")   # the watcher's
        assert _eventually(lambda: symbols.module("watched") is not None)
    finally:
        engine.shutdown()
    (tmp_path / "late.py").write_text("x = 1\n")                 # after shutdown: not watched
    time.sleep(0.5)
    assert symbols.module("late") is None


def test_a_folder_given_after_the_walk_is_walked_for_every_subscriber(tmp_path):
    (tmp_path / "lib.py").write_text("X = 1\n")
    workspace, ws = Workspace(), WorkspaceIndex(Encoder())
    analysis = CodeAnalysis(AnalysisOptions())
    workspace.subscribe(ws)
    workspace.subscribe(analysis.index)
    workspace.walk()                                        # no folder yet
    report = workspace.set_folders([tmp_path])
    assert report.files == 1 and analysis.index.module("lib").names == {"X"}
    assert _keys(ws) == {str(tmp_path / "lib.py")}


def test_the_same_change_told_twice_is_handed_out_once(tmp_path):
    f = tmp_path / "m.py"
    f.write_text("a = 1\n")
    workspace, ws = _drafting(tmp_path)
    workspace.walk()
    f.write_text("a = 2\n")
    calls = len(ws.encode_batch.calls)
    assert workspace.file_changed(f) and workspace.file_changed(f)   # the watcher, the client
    assert len(ws.encode_batch.calls) == calls + 1
