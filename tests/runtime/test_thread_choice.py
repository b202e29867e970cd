"""The forward's thread count: measured where it changes no bit (runtime/thread_choice.py)."""
import random

import pytest
import torch

from inkling.runtime import model_loader, thread_choice
from inkling.runtime.model_loader import load_runtime
from inkling.runtime.native_llama import MAX_ROWS
from inkling.cache.prompt_cache import PromptCache
from inkling.runtime.thread_choice import EXPLORE_EVERY, WARMUP, WINDOW, ThreadChoice


def _run(choice: ThreadChoice, ms_of, forwards: int, rows: int = 1) -> list[int]:
    """``forwards`` forwards of ``rows`` rows; ``ms_of(i, threads)``: what each takes."""
    picked = []
    for i in range(forwards):
        t = choice.pick(rows)
        choice.record(rows, t, ms_of(i, t) * random.Random(i).uniform(0.95, 1.05))
        picked.append(t)
    return picked


def test_one_count_is_fixed_and_a_pin_overrides_the_choice():
    fixed = ThreadChoice(3)
    assert not fixed.adaptive and fixed.pick(1) == 3 and fixed.fixed() == 3
    fixed.record(1, 3, 1.0)
    assert fixed.report() == {"counts": [3], "adaptive": False, "threads": 3,
                              "one_row_ms": {}}
    choice = ThreadChoice(1, 2)
    assert choice.adaptive
    with choice.pinned(2):
        assert not choice.adaptive and choice.pick(1) == 2 and choice.fixed() == 2
    assert choice.adaptive and choice.fixed() == 1


def test_each_count_is_measured_then_the_faster_runs():
    choice = ThreadChoice(1, 2)
    picked = _run(choice, lambda i, t: {1: 1.5, 2: 1.1}[t], 200)
    assert sorted(picked[:2 * WARMUP]) == [1] * WARMUP + [2] * WARMUP
    rest = picked[2 * WARMUP:]
    ones = rest.count(1)
    assert 1 <= ones <= len(rest) // EXPLORE_EVERY + 1      # the slower: one in 16 at most
    report = choice.report()
    assert report["threads"] == 2 and report["one_row_ms"]["2"] < report["one_row_ms"]["1"]


def test_a_much_slower_count_is_tried_seldom_and_taken_back_when_it_is_fast_again():
    choice = ThreadChoice(1, 2)
    busy = 1000           # two threads beside a busy process: five times one thread's
    picked = _run(choice, lambda i, t: 1.2 if t == 1 else (6.0 if i < busy else 0.9), 1400)
    contended = picked[2 * WARMUP:busy]
    # its turns cost at most 3% of the time: about one forward in a hundred here
    assert 1 <= contended.count(2) <= len(contended) // 80
    assert contended.count(2) < len(contended) // EXPLORE_EVERY
    freed = picked[busy:]
    first = freed.index(2)
    assert freed[first:first + 3] == [2, 2, 2]             # confirmed at once
    assert freed[-100:].count(2) >= 90                     # and kept


def test_a_count_that_gets_slow_is_left_within_a_few_forwards():
    choice = ThreadChoice(1, 2)
    picked = _run(choice, lambda i, t: 1.2 if t == 1 else (0.9 if i < 300 else 8.0), 400)
    assert picked[250:300].count(2) >= 45
    assert picked[300:310].count(2) <= WINDOW // 2 + 1 and picked[310:].count(2) <= 5


def test_forwards_of_several_rows_follow_the_one_row_choice():
    choice = ThreadChoice(1, 2)
    assert choice.pick(8) == 1                               # nothing measured: the base
    choice.record(8, 1, 100.0)                               # not compared
    _run(choice, lambda i, t: {1: 1.5, 2: 1.1}[t], 100, rows=1)
    assert {choice.pick(rows) for rows in (2, 9, 64)} == {2}
    assert set(choice.report()["one_row_ms"]) == {"1", "2"}
    _run(choice, lambda i, t: {1: 1.0, 2: 3.0}[t], 100, rows=1)
    assert {choice.pick(rows) for rows in (2, 9, 64)} == {1}


@pytest.fixture
def two_cores(monkeypatch):
    monkeypatch.setattr(model_loader, "usable_cores", lambda: 2)
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


def test_the_runtime_chooses_for_native_forwards_only(tiny_model_dir, two_cores, monkeypatch):
    rt = load_runtime(tiny_model_dir, device="cpu", dtype="float32")        # threads 0
    assert rt.threads.counts == (1, 2) and rt.threads.adaptive
    seen = []
    real_use = thread_choice.ThreadChoice.use
    monkeypatch.setattr(thread_choice.ThreadChoice, "use",
                        staticmethod(lambda t: (seen.append(t), real_use(t))))
    c = PromptCache(rt, "full", forward="native")
    c.extend(list(range(5, 5 + MAX_ROWS + 10)), last_only=True)   # past the native rows
    assert seen == [1]                                             # the fixed count
    for tok in range(20):
        c.extend([7 + tok])
    assert set(seen[1:]) == {1, 2}                                 # both measured
    assert set(rt.threads.report()["one_row_ms"]) == {"1", "2"}
    seen.clear()
    compact = PromptCache(rt, "full", forward="compact")
    for tok in range(5):
        compact.extend([7 + tok])
    assert seen == [1] * 5                                         # never chosen for


def test_a_thread_count_asked_for_is_kept(tiny_model_dir, two_cores):
    rt = load_runtime(tiny_model_dir, device="cpu", dtype="float32", threads=2)
    assert rt.threads.counts == (2,) and not rt.threads.adaptive
    c = PromptCache(rt, "full", forward="native")
    for tok in range(5):
        c.extend([7 + tok])
    assert torch.get_num_threads() == 2 and rt.threads.report()["one_row_ms"] == {}


def test_omp_num_threads_limits_the_cores(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    assert model_loader.usable_cores() == 1
    assert model_loader.thread_choice(0, 1, 6_000_000).counts == (1,)
    monkeypatch.delenv("OMP_NUM_THREADS")
    assert model_loader.usable_cores() >= 1
    assert model_loader.thread_choice(0, None, 6_000_000) is None          # a GPU
