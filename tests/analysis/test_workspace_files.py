"""The workspace's one file reader (analysis/workspace_files.py): regular files only, never
a blocking open, a size cap, each skip logged once (issue 71)."""
import logging
import os
import socket
import threading

from inkling.analysis import workspace_files
from inkling.analysis.workspace_files import read_bytes, read_text


def _bounded(call, *args):
    """``call(*args)`` on a thread; an AssertionError where it has not returned in time."""
    out = []
    thread = threading.Thread(target=lambda: out.append(call(*args)), daemon=True)
    thread.start()
    thread.join(20)
    assert out, f"{call.__name__}{args} blocked"
    return out[0]


def test_a_regular_file_is_read(tmp_path):
    path = tmp_path / "a.py"
    path.write_text("x = 'é'\n", encoding="utf-8")
    assert read_text(path) == ("x = 'é'\n", "")
    path.write_bytes(b"\xff\xfe")
    assert read_text(path) == (None, "non-UTF-8 files")
    assert read_text(path, errors="replace")[0] == "\ufffd\ufffd"
    assert read_bytes(tmp_path / "gone.py") == (None, "vanished files")


def test_special_files_are_skipped_without_blocking(tmp_path):
    fifo = tmp_path / "pipe.py"
    os.mkfifo(fifo)
    (tmp_path / "link.py").symlink_to(fifo)
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(tmp_path / "sock.py"))
    try:
        for name in ("pipe.py", "link.py", "sock.py"):
            assert _bounded(read_text, tmp_path / name) == (None, "special files"), name
    finally:
        sock.close()
    assert read_text(tmp_path) == (None, "special files")           # a folder
    assert read_bytes(tmp_path / "link.py", follow_symlinks=False) == (None, "symlinks")


def test_a_file_over_the_cap_is_skipped(tmp_path):
    path = tmp_path / "big.py"
    path.write_bytes(b"x" * 101)
    assert read_bytes(path, 100) == (None, "huge files")
    assert read_bytes(path, 101) == (b"x" * 101, "")
    from inkling.analysis.analysis_options import AnalysisOptions
    from inkling.analysis.workspace import WorkspaceLimits
    assert WorkspaceLimits().max_file_bytes == AnalysisOptions().max_file_bytes == \
        workspace_files.MAX_FILE_BYTES                           # one cap, one decision


def test_a_fifo_swapped_in_after_the_check_is_refused(tmp_path, monkeypatch):
    path = tmp_path / "swap.py"
    path.write_text("x = 1\n")
    real_lstat = os.lstat

    def lstat_then_swap(p, *args, **kwargs):
        seen = real_lstat(p, *args, **kwargs)
        os.unlink(p)
        os.mkfifo(p)
        return seen
    monkeypatch.setattr(workspace_files.os, "lstat", lstat_then_swap)
    assert _bounded(read_bytes, path) == (None, "special files")


def test_each_skipped_path_is_logged_once(tmp_path, caplog):
    fifo = tmp_path / "once.py"
    os.mkfifo(fifo)
    with caplog.at_level(logging.INFO, logger="inkling.workspace"):
        for _ in range(3):
            assert read_text(fifo)[0] is None
    lines = [r.getMessage() for r in caplog.records if str(fifo) in r.getMessage()]
    assert lines == [f"workspace file {fifo}: a FIFO, not read"]


class _Taker:
    """A workspace subscriber keeping the texts it is handed, by file name."""

    def __init__(self):
        self.files = {}

    def wants(self, path):
        return True

    def set_roots(self, roots):
        pass

    def put_files(self, files):
        self.files.update((f.path.name, f.text) for f in files)

    def walk_done(self):
        pass

    def file_changed(self, file):
        self.put_files([file])

    def remove_files(self, paths):
        pass


def test_the_walk_and_a_change_meet_fifos_and_go_on(tmp_path):
    from inkling.analysis.workspace import Workspace
    (tmp_path / "a.py").write_text("a = 1\n")
    os.mkfifo(tmp_path / ".gitignore")          # the walk reads a folder's rules
    os.mkfifo(tmp_path / "pipe.py")
    workspace, taker = Workspace([tmp_path]), _Taker()
    workspace.subscribe(taker)
    _bounded(workspace.walk)
    assert taker.files == {"a.py": "a = 1\n"}
    assert _bounded(workspace.file_changed, tmp_path / "pipe.py") is False
    assert _bounded(workspace.file_changed, tmp_path / "a.py") is True
    assert taker.files == {"a.py": "a = 1\n"}


def test_a_read_past_the_time_bound_is_abandoned(tmp_path, monkeypatch):
    path = tmp_path / "slow.py"
    path.write_bytes(b"y" * 64)
    monkeypatch.setattr(workspace_files, "CHUNK", 8)
    monkeypatch.setattr(workspace_files, "READ_SECONDS", -1.0)     # past it after a chunk
    assert read_bytes(path) == (None, "slow files")
