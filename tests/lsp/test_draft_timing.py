"""The server's timing of ``completion.draft auto`` (lsp/model_loading.py ``time_drafting``): a
round of forwards per model-worker job, so that a job queued while one round runs (a completion)
runs before the next round; a model replaced meanwhile stops it; a kept timing runs nothing."""
from __future__ import annotations

import asyncio
import shutil
import threading
from types import SimpleNamespace

import pytest

from inkling.completion.drafting import draft_mode
from inkling.completion.drafting.draft_mode import ROUNDS, DraftState, known, measuring
from inkling.completion.engine import Engine
from inkling.completion.options import InklingOptions
from inkling.lsp import model_loading
from inkling.lsp.model_worker import ModelWorker
from inkling.runtime.model_loader import load_runtime
from inkling.runtime.native_build import cache_root

PRIOR = 1.0


@pytest.fixture()
def runtime(tiny_model_dir, tmp_path, monkeypatch):
    """The tiny model loaded afresh, nothing timed or cached for it (the native builds kept)."""
    monkeypatch.setenv("INKLING_NATIVE_CACHE", str(cache_root()))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    folder = shutil.copytree(tiny_model_dir, tmp_path / "model")
    return load_runtime(folder, device="cpu", dtype="float32")


def _server(runtime):
    """What ``time_drafting`` reads of the server: its Engine, its worker and its log."""
    logs: list[str] = []
    return SimpleNamespace(engine=Engine(InklingOptions(), runtime=runtime), worker=ModelWorker(),
                           log=lambda message, kind=None: logs.append(message)), logs


def _trees(monkeypatch, events: list, on_first=None) -> None:
    """Record each timed tree forward (its thread) in ``events``; ``on_first`` at the first."""
    real = draft_mode._timed_tree

    def timed(cache, rows, device):
        if on_first is not None and not events:
            on_first()
        events.append(("tree", rows, threading.current_thread().name))
        return real(cache, rows, device)
    monkeypatch.setattr(draft_mode, "_timed_tree", timed)


def test_measuring_runs_a_round_per_step_then_gives_the_choice(runtime, monkeypatch):
    events: list = []
    _trees(monkeypatch, events)
    steps = measuring(runtime, "auto", PRIOR)
    assert next(steps) is None and events == []             # the context's prefill
    for round_ in range(ROUNDS + 1):                        # a warm-up round, then the timed
        assert len(events) == 3 * round_
        choice = next(steps)
        assert (choice is None) == (round_ < ROUNDS)
    assert [rows for _, rows, _ in events] == [1, 8, 16] * (ROUNDS + 1)
    assert choice.state == DraftState.MEASURED and set(choice.ms) == {1, 8, 16}
    assert known(runtime, "auto", PRIOR) is choice          # kept, and cached for the next load
    assert list((draft_mode.cache_folder("drafting")).glob("*.json"))


def test_a_job_queued_during_the_timing_runs_before_its_next_round(runtime, monkeypatch):
    ls, logs = _server(runtime)
    events: list = []
    prepared = []

    async def prepare(server):                   # a decision to draft builds its sources
        prepared.append(server)
    monkeypatch.setattr(model_loading, "prepare_drafting", prepare)

    async def scenario():
        loop = asyncio.get_running_loop()
        completion = lambda: events.append(("completion",))   # noqa: E731
        # queued from the loop while the first round runs, as a completion request would be
        _trees(monkeypatch, events, lambda: loop.call_soon_threadsafe(ls.worker.run, completion))
        await model_loading.time_drafting(ls)

    try:
        asyncio.run(scenario())
    finally:
        ls.worker.shutdown()
    at = events.index(("completion",))
    assert 0 < at < len(events) - 3                  # after the first round, before the last
    assert all(e[2].startswith("inkling-model") for e in events if e[0] == "tree")
    assert len([e for e in events if e[0] == "tree"]) == 3 * (ROUNDS + 1)
    choice = known(runtime, "auto", PRIOR)
    assert choice.state == DraftState.MEASURED
    assert logs == [model_loading.TIMING_LINE,
                    f"model {runtime.path}: drafting {choice.mode} (measured: {choice.reason})"]
    assert prepared == ([ls] if choice.mode == "suffix" else [])
    ls.worker = ModelWorker()
    try:
        asyncio.run(model_loading.time_drafting(ls))          # kept: nothing runs, nothing said
    finally:
        ls.worker.shutdown()
    assert len(events) == 3 * (ROUNDS + 1) + 1 and len(logs) == 2


def test_a_replaced_model_stops_the_timing_which_begins_once_a_forward(runtime, tiny_model_dir,
                                                                      monkeypatch):
    events: list = []
    ls, logs = _server(runtime)
    other = load_runtime(tiny_model_dir, device="cpu", dtype="float32")
    # the model is replaced (a configuration change) once the timing has begun
    _trees(monkeypatch, events, lambda: setattr(ls.engine, "_runtime", other))
    try:
        asyncio.run(model_loading.time_drafting(ls))
        assert len(events) == 3 and logs == [model_loading.TIMING_LINE]   # one round, then stop
        assert known(runtime, "auto", PRIOR).state == DraftState.NOT_MEASURED
        ls.engine._runtime = runtime
        asyncio.run(model_loading.time_drafting(ls))       # begun once for this forward
        assert len(events) == 3
    finally:
        ls.worker.shutdown()


def test_a_session_that_ends_mid_timing_leaves_the_timing_to_the_next(runtime, monkeypatch):
    """Two TCP sessions share one runtime: the first ends after a round; the second times."""
    events: list = []
    first, _ = _server(runtime)
    second, logs = _server(runtime)

    async def prepare(server):
        pass
    monkeypatch.setattr(model_loading, "prepare_drafting", prepare)

    async def ended_after_a_round():
        loop = asyncio.get_running_loop()
        _trees(monkeypatch, events, lambda: loop.call_soon_threadsafe(first.worker.shutdown))
        await model_loading.time_drafting(first)

    asyncio.run(ended_after_a_round())
    assert len(events) == 3 and known(runtime, "auto", PRIOR).state == DraftState.NOT_MEASURED
    try:
        asyncio.run(model_loading.time_drafting(second))
    finally:
        second.worker.shutdown()
    assert known(runtime, "auto", PRIOR).state == DraftState.MEASURED
    assert logs[0] == model_loading.TIMING_LINE and len(events) == 3 + 3 * (ROUNDS + 1)
