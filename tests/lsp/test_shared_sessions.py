"""What the sessions of a TCP server share and what each keeps: one model thread, whose jobs
a session's shutdown cancels only for that session; cancel tokens per session (the same uri
in two sessions is two jobs); one loaded model for Engines whose model options agree."""
from __future__ import annotations

import asyncio
import threading

import pytest

from inkling.completion.engine import Engine
from inkling.completion.options import InklingOptions
from inkling.lsp.model_worker import ModelThread, ModelWorker
from inkling.lsp.shared_runtimes import SharedRuntimes


def test_a_session_ending_cancels_its_own_queued_jobs_and_no_other():
    async def go():
        thread, ran, gate = ModelThread(), [], threading.Event()
        a, b = ModelWorker(thread), ModelWorker(thread)
        blocker = a.run(gate.wait, 10)              # holds the thread while both queue
        a_job = a.run(ran.append, "a")
        b_job = b.run(ran.append, "b")
        stopped = a.shutdown(lambda: ran.append("a stopped"))
        gate.set()
        await asyncio.gather(blocker, b_job, stopped)
        late = a.run(ran.append, "a late")          # the session has ended: nothing runs
        for job in (a_job, late):
            with pytest.raises(asyncio.CancelledError):
                await job
        assert await b.run(ran.append, "b again") is None      # the thread still serves b
        thread.close()
        return ran
    assert asyncio.run(go()) == ["b", "a stopped", "b again"]


def test_the_same_uri_in_two_sessions_is_two_jobs():
    thread = ModelThread()
    a, b = ModelWorker(thread), ModelWorker(thread)
    a_token, b_token = a.start_job("file:///x.py"), b.start_job("file:///x.py")
    a.cancel_job("file:///x.py", "edited")
    assert a_token.reason == "edited" and not b_token.is_cancelled()
    a.start_job("file:///x.py")                     # a newer request in a supersedes a's only
    assert not b_token.is_cancelled()
    thread.close()


def test_engines_whose_model_options_agree_share_one_loaded_model(bundled_model_dir):
    shared = SharedRuntimes()
    options = InklingOptions().merged({"model": {"path": str(bundled_model_dir),
                                                 "device": "cpu", "forward": "compact"}})
    first, second = Engine(options, load=shared.load), Engine(options, load=shared.load)
    assert first.load_model() is second.load_model()
    other = Engine(options.merged({"model": {"dtype": "float32"}}), load=shared.load)
    assert other.load_model() is not first.load_model()
    assert Engine(options).load_model() is not first.load_model()     # no shared loader
