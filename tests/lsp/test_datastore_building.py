"""A server that finds the corpus datastore being built by another process (a real one,
holding its lock) neither builds it nor waits: it says so in one line and serves (issue 71)."""
import subprocess
import sys

import pytest
from tokenizers import Tokenizer

from inkling.completion.drafting.datastore import corpus_cache
from inkling.models.corpus import load_corpus

from lsp_wire import Wire

pytestmark = pytest.mark.slow
HOLDER = """
import sys
from pathlib import Path
from inkling.runtime import build_lock
fd = build_lock.take(Path(sys.argv[1]))
print("held" if fd is not None else "busy", flush=True)
sys.stdin.readline()
"""


def test_a_second_server_serves_while_another_builds_the_datastore(tiny_model_dir, tmp_path,
                                                                   monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))     # the servers' cache, this test's
    tokenizer = Tokenizer.from_file(str(tiny_model_dir / "tokenizer.json")).to_str()
    folder = tmp_path / "inkling" / "datastore"
    cache = corpus_cache(load_corpus().train, tokenizer, folder)
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(cache.with_suffix(".lock"))],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    wire = None
    try:
        assert holder.stdout.readline() == "held\n"
        wire = Wire(tiny_model_dir, {"completion": {"maxNewTokens": 4, "maxBlockTokens": 4,
                                                    "draft": "suffix", "datastore": "corpus"}})
        said = [m for m in wire.log_messages() if "datastore corpus: being built" in m]
        assert len(said) == 1 and f"pid {holder.pid} " in said[0], wire.log_messages()
        uri = (tmp_path / "main.py").as_uri()
        wire.open(uri, "def area(width, height):\n    return width\n")
        assert "result" in wire.wait(wire.inline(uri, 1, 16), 60)
        assert "result" in wire.call("inkling/stats", {}, 60)
        assert list(folder.glob("corpus-*.npz")) == []              # not built here
        assert wire.close()[0] == 0
    finally:
        if wire is not None:
            wire.kill()
        holder.kill()
        holder.wait()
