"""A FIFO in the workspace, named by the editor's ``workspace/didChangeWatchedFiles``, stalls
nothing: the real server answers completions and stats after it (issue 71)."""
import os

import pytest

from lsp_wire import Wire

pytestmark = pytest.mark.slow


def test_a_fifo_named_by_the_editor_does_not_stall_the_worker(tiny_model_dir, tmp_path):
    folder = tmp_path / "ws"
    folder.mkdir()
    (folder / "main.py").write_text("def area(width, height):\n    return width\n")
    fifo = folder / "pipe.py"
    os.mkfifo(fifo)                  # before the folder is added: the walk skips it, no event
    wire = Wire(tiny_model_dir, {"completion": {"maxNewTokens": 4, "maxBlockTokens": 4,
                                                "draft": "suffix", "context": "similar"}},
                log_level="info")
    try:
        wire.notify("workspace/didChangeWorkspaceFolders", {"event": {
            "added": [{"uri": folder.as_uri(), "name": "ws"}], "removed": []}})
        uri = (folder / "main.py").as_uri()
        wire.open(uri, (folder / "main.py").read_text())
        for kind in (1, 2):          # created, changed
            wire.notify("workspace/didChangeWatchedFiles",
                        {"changes": [{"uri": fifo.as_uri(), "type": kind}]})
        answer = wire.wait(wire.inline(uri, 1, 16), 60)
        assert "result" in answer, answer
        stats = wire.call("inkling/stats", {}, 60)
        assert stats["result"]["answered"] >= 1, stats
        assert sum("pipe.py: a FIFO, not read" in line for line in wire.stderr) == 1, \
            wire.stderr[-20:]
        fifo.unlink()
        assert "result" in wire.call("inkling/stats", {}, 60)
        assert wire.close()[0] == 0
    finally:
        wire.kill()
