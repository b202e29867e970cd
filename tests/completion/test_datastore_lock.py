"""One corpus datastore build per machine (issue 71): a process that finds another building the
cache does not build and does not wait, drafts without it and takes the cache up once written;
a dead builder's lock is taken over. The other builder is a real process."""
import logging
import signal
import subprocess
import sys
import threading
import time
from types import SimpleNamespace

import pytest

from inkling.completion.drafting import datastore
from inkling.completion.drafting.datastore import (Building, Datastore, Deferred, corpus_cache,
                                                  corpus_ids)
from inkling.completion.drafting.sources import DraftSources
from inkling.models.corpus import Corpus, CorpusFile
from inkling.runtime import build_lock

FILES = [CorpusFile("a.py", "x = 1\n"), CorpusFile("b.py", "def f():\n    pass\n")]
# a builder whose tokenizer waits for a line on stdin before it answers
BUILDER = """
import sys
from pathlib import Path
from inkling.completion.drafting.datastore import corpus_ids
from inkling.models.corpus import CorpusFile
files = [CorpusFile("a.py", "x = 1\\n"), CorpusFile("b.py", "def f():\\n    pass\\n")]
def encode(texts):
    print("building", flush=True)
    sys.stdin.readline()
    return [[ord(c) for c in t] for t in texts]
print(corpus_ids(files, "tok", encode, None, Path(sys.argv[1]))[1], flush=True)
"""


class Encoder:
    def __init__(self):
        self.calls = 0

    def __call__(self, texts):
        self.calls += 1
        return [[ord(c) for c in t] for t in texts]


@pytest.fixture
def builder(tmp_path):
    """A process inside the corpus build of ``tmp_path``'s cache, holding its lock."""
    proc = subprocess.Popen([sys.executable, "-c", BUILDER, str(tmp_path)], text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert proc.stdout.readline() == "building\n"
    yield proc
    if proc.poll() is None:
        proc.kill()
    proc.wait()


def _finish(proc) -> str:
    proc.stdin.write("\n")
    proc.stdin.flush()
    out = proc.stdout.read()
    assert proc.wait(30) == 0
    return out


def _bounded(call, *args, **kwargs):
    """``call`` on a thread; an AssertionError where it has not returned in time (it waited)."""
    out = []
    thread = threading.Thread(target=lambda: out.append(_caught(call, *args, **kwargs)),
                              daemon=True)
    thread.start()
    thread.join(20)
    assert out, f"{call.__name__} waited for the other build"
    return out[0]


def _caught(call, *args, **kwargs):
    try:
        return call(*args, **kwargs)
    except Exception as exc:         # noqa: BLE001 - handed back to the test
        return exc


def _until_taken_up(sources, runtime) -> dict:
    """The n-gram sources once they hold the datastore (its load runs on a thread)."""
    deadline = time.monotonic() + 30
    while "datastore" not in (found := sources.ngram_sources("u", "x = ", 4, runtime)):
        assert time.monotonic() < deadline, "the datastore was not taken up"
        time.sleep(0.05)
    return found


def test_a_second_process_neither_builds_nor_waits(tmp_path, builder):
    encode = Encoder()
    busy = _bounded(corpus_ids, FILES, "tok", encode, None, tmp_path, wait=False)
    assert isinstance(busy, Building) and f"pid {builder.pid} " in busy.holder
    assert encode.calls == 0 and not corpus_cache(FILES, "tok", tmp_path).exists()
    assert _finish(builder) == "False\n"                        # the builder tokenized
    ids, cached = corpus_ids(FILES, "tok", encode, None, tmp_path, wait=False)
    assert cached and encode.calls == 0 and [list(x) for x in ids] == [[ord(c) for c in f.text]
                                                                    for f in FILES]


def test_a_waiting_caller_takes_the_cache_the_builder_wrote(tmp_path, builder):
    encode, out = Encoder(), []
    waiter = threading.Thread(target=lambda: out.append(
        corpus_ids(FILES, "tok", encode, None, tmp_path)), daemon=True)
    waiter.start()
    waiter.join(1.5)
    assert waiter.is_alive()                                    # waiting on the lock
    _finish(builder)
    waiter.join(30)
    assert out and out[0][1] is True and encode.calls == 0


def test_the_lock_of_a_dead_builder_is_taken_over(tmp_path, builder, caplog):
    builder.send_signal(signal.SIGKILL)
    builder.wait()
    lock = corpus_cache(FILES, "tok", tmp_path).with_suffix(".lock")
    assert f'"pid": {builder.pid}' in lock.read_text()          # it still names the dead one
    encode = Encoder()
    with caplog.at_level(logging.INFO, logger="inkling.runtime.build_lock"):
        ids, cached = corpus_ids(FILES, "tok", encode, None, tmp_path, wait=False)
    assert not cached and encode.calls == 1 and len(ids) == 2
    assert f"from pid {builder.pid} " in caplog.text and "its process is gone" in caplog.text
    assert build_lock.holder(lock) is None and lock.read_text() == ""


def _corpus_in(tmp_path, monkeypatch):
    """The corpus of FILES cached under ``tmp_path``: (the counting encoder, a runtime)."""
    monkeypatch.setattr(datastore, "load_corpus", lambda: Corpus(tmp_path, FILES, []))
    monkeypatch.setattr(datastore, "cache_dir", lambda: tmp_path)
    encode = Encoder()
    runtime = SimpleNamespace(tokenizer=SimpleNamespace(to_str=lambda: "tok"),
                              encode_batch=encode, encode=lambda text: [ord(c) for c in text])
    return encode, runtime


def test_drafting_goes_on_without_it_and_takes_it_up_once_cached(tmp_path, builder, monkeypatch,
                                                                  caplog):
    encode, runtime = _corpus_in(tmp_path, monkeypatch)
    sources = DraftSources()
    deferred = _bounded(sources.build_datastore, "corpus", runtime, wait=False)
    assert isinstance(deferred, Deferred) and f"pid {builder.pid} " in deferred.summary()
    assert "datastore" not in sources.ngram_sources("u", "x = ", 4, runtime)
    assert encode.calls == 0 and sources.datastore is None
    _finish(builder)
    with caplog.at_level(logging.INFO, logger="inkling.drafting"):
        found = _until_taken_up(sources, runtime)
    store = found["datastore"]
    assert isinstance(store, Datastore) and store.from_cache and store.files == 2
    assert encode.calls == 0 and sources.deferred is None
    assert "taken up after the build by pid" in caplog.text


def test_a_builder_that_died_leaves_the_build_to_the_deferred_one(tmp_path, builder,
                                                                  monkeypatch):
    encode, runtime = _corpus_in(tmp_path, monkeypatch)
    sources = DraftSources()
    assert isinstance(sources.build_datastore("corpus", runtime, wait=False), Deferred)
    builder.kill()
    builder.wait()
    store = _until_taken_up(sources, runtime)["datastore"]
    assert not store.from_cache and encode.calls == 1
    assert corpus_cache(FILES, "tok", tmp_path).is_file()
