"""The workspace source: indexing rules, budgets, bad files, and the file watcher."""
import os
import time

from inkling.completion.drafting.workspace_index import WorkspaceIndex, WorkspaceLimits


def encode(text):
    return [ord(c) % 251 for c in text]                     # a stand-in tokenizer


def encode_batch(texts):
    return [encode(t) for t in texts]


def _keys(index):
    return set(index.index._seqs)


def test_gitignore_binary_huge_and_hidden_are_skipped(tmp_path):
    (tmp_path / ".gitignore").write_text("build/\n*.log\n")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("def a():\n    return 1\n")
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "gen.py").write_text("x = 1\n")
    (tmp_path / "run.log").write_text("log\n")
    (tmp_path / "blob.bin").write_bytes(b"\x00\x01\x02")
    (tmp_path / "big.py").write_text("x" * 5000)
    (tmp_path / ".hidden").mkdir()
    (tmp_path / ".hidden" / "h.py").write_text("h = 1\n")
    (tmp_path / "loop").symlink_to(tmp_path)                # a symlink loop
    ws = WorkspaceIndex(encode_batch, WorkspaceLimits(max_file_bytes=4000))
    report = ws.index_folders([tmp_path])
    assert _keys(ws) == {str(tmp_path / "src" / "a.py"), str(tmp_path / ".gitignore")}
    assert report.skipped["binary files"] == 1 and report.skipped["huge files"] == 1
    assert report.skipped["ignored files"] >= 1 and "skipped" in report.summary()


def test_file_budget_is_kept_and_reported(tmp_path):
    for i in range(30):
        (tmp_path / f"f{i:02d}.py").write_text(f"v{i} = {i}\n")
    ws = WorkspaceIndex(encode_batch, WorkspaceLimits(max_files=10))
    report = ws.index_folders([tmp_path])
    assert report.files == 10 and report.skipped["files over the file budget"] == 20


def test_unreadable_and_vanishing_files_do_not_stop_indexing(tmp_path, monkeypatch):
    (tmp_path / "ok.py").write_text("ok = 1\n")
    (tmp_path / "gone.py").write_text("gone = 1\n")
    ws = WorkspaceIndex(encode_batch)
    real = ws.candidates

    def vanish(root, report):
        for p in real(root, report):
            if p.name == "gone.py":
                p.unlink()
            yield p
    monkeypatch.setattr(ws, "candidates", vanish)
    report = ws.index_folders([tmp_path])
    assert report.files == 1 and report.skipped["vanished files"] == 1


def test_changed_file_on_disk_is_reflected_within_a_second(tmp_path):
    f = tmp_path / "m.py"
    f.write_text("alpha = 1\n")
    ws = WorkspaceIndex(encode_batch)
    ws.index_folders([tmp_path])
    ws.start_watching()
    try:
        f.write_text("alpha = 1\nbeta_gamma_delta = 2\n")
        needle = encode("beta_gamma")
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline and not ws.matches(needle):
            time.sleep(0.02)
        assert ws.matches(needle), "the change was not indexed within 1 s"
        os.remove(f)
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline and ws.matches(needle):
            time.sleep(0.02)
        assert not ws.matches(needle)
        assert max(ws.updates_ms) < 50
    finally:
        ws.stop()
