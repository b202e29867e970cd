"""How many CPU threads a forward runs on: measured, where the choice cannot change a bit.

A small model's one-row step is bound by reading its weights (the bundled model's 25 MB
come from memory at every token). On an idle second core a second thread reads half of
them: the bundled model's median completion took 22 ms instead of 29 on this 2-core
machine. But where another process holds that core every step waits for it: the same
completions took 55 ms on two threads against 28 on one beside a busy process of the same
priority (a process at nice 19, such as the model's own training, yields the core and
costs little). Neither count is right for a person's machine, whose load comes and goes,
so with ``model.threads`` 0 a small model's native forward measures both, by row count:

- each count runs ``WARMUP`` forwards of a row bucket first; then the count whose recent
  forwards (the median of the last ``WINDOW``) were faster runs, and the other one now and
  then, so that a change of load is seen: at most one forward in ``EXPLORE_EVERY``, and
  only while what its turns cost beyond the faster count's (by the medians) stays within
  ``EXPLORE_SHARE`` of the bucket's forward time (two threads beside a busy process cost 4
  to 10 times one thread's: they are then tried about once in a hundred forwards); a turn
  faster than the other count's median is tried again at once, so a core freed is taken
  within a few forwards;
- only forwards of the native layers (``NativeLlama.runs_native``) are chosen for: their
  sums never depend on the thread count (``llama_step.cpp``), so the choice changes only
  time, never a token. Every other forward (a long prompt's chunk through MKL's GEMM,
  which sums by thread count; the compact and reference forwards) runs on ``base``.

With ``model.threads`` N (or a large model, all cores, or a GPU) there is one count and
nothing is measured. The choice is the runtime's; its counters are kept under a lock, as
completions of several engines may share one runtime.
"""
from __future__ import annotations

import contextlib
import statistics
import threading
from collections import deque
from dataclasses import dataclass, field

import torch

BUCKETS = (1, 2, 4, 8, 16, 32, 64)     # forwards are timed by the bucket of their rows
WARMUP = 3                             # forwards a count runs in a bucket before comparing
WINDOW = 5                             # recent forwards per count and bucket compared
EXPLORE_EVERY = 16                     # at most one forward in this many runs the slower count
EXPLORE_SHARE = 0.03                   # what those turns may cost, of the bucket's time


def bucket(rows: int) -> int:
    """The smallest bucket holding ``rows`` (the largest for more)."""
    for b in BUCKETS:
        if rows <= b:
            return b
    return BUCKETS[-1]


@dataclass
class _Bucket:
    """What the forwards of one row bucket measured."""
    ms: dict = field(default_factory=dict)     # threads -> deque of its recent ms
    spent: float = 0.0                         # ms of all its chosen-for forwards
    explored: float = 0.0                      # what its turns of the slower count cost more
    since: int = 0                             # forwards since the slower count's last turn


class ThreadChoice:
    """``pick(rows)`` before a forward that may be chosen for, ``record`` after it;
    ``fixed()`` for every other forward (``use`` sets torch's count)."""

    def __init__(self, base: int, most: int = 0):
        self.base = base                                   # threads of unchosen forwards
        self.counts = (base, most) if most > base else (base,)   # the counts compared
        self._buckets: dict[int, _Bucket] = {}
        self._pinned: int | None = None                    # a count fixed from outside
        self._lock = threading.Lock()

    @property
    def adaptive(self) -> bool:
        return len(self.counts) > 1 and self._pinned is None

    def fixed(self) -> int:
        """The count of a forward that is not chosen for."""
        return self._pinned if self._pinned is not None else self.base

    def pick(self, rows: int) -> int:
        """The count for a forward of ``rows`` rows whose result no count changes."""
        if not self.adaptive:
            return self.fixed()
        with self._lock:
            b = self._buckets.setdefault(bucket(rows), _Bucket())
            runs = {t: b.ms.get(t, ()) for t in self.counts}
            short = [t for t in self.counts if len(runs[t]) < WARMUP]
            if short:                                      # each count measured first
                return min(short, key=lambda t: len(runs[t]))
            median = {t: statistics.median(r) for t, r in runs.items()}
            best = min(self.counts, key=median.get)
            other = next(t for t in self.counts if t != best)
            gap = median[other] - median[best]
            b.since += 1
            promising = runs[other][-1] < median[best]     # its last turn beat the best
            if promising or (b.since >= EXPLORE_EVERY
                             and b.explored + gap <= EXPLORE_SHARE * b.spent):
                b.explored += gap
                b.since = 0
                return other
            return best

    def record(self, rows: int, threads: int, ms: float) -> None:
        """A chosen-for forward of ``rows`` rows took ``ms`` on ``threads``."""
        if not self.adaptive:
            return
        with self._lock:
            b = self._buckets.setdefault(bucket(rows), _Bucket())
            b.ms.setdefault(threads, deque(maxlen=WINDOW)).append(ms)
            b.spent += ms

    @staticmethod
    def use(threads: int) -> None:
        """Set torch's intra-op thread count (the process's) to ``threads``."""
        if torch.get_num_threads() != threads:
            torch.set_num_threads(threads)

    @contextlib.contextmanager
    def pinned(self, threads: int):
        """Every forward on ``threads`` while inside (a benchmark's fixed-count column)."""
        before, self._pinned = self._pinned, threads
        try:
            yield
        finally:
            self._pinned = before

    def report(self) -> dict:
        """For ``inkling/stats`` and the replay's config: the counts compared (one when
        fixed), and per row bucket measured, each count's recent median ms and the
        count chosen."""
        with self._lock:
            by_rows = {}
            for size, b in sorted(self._buckets.items()):
                if not all(b.ms.get(t) for t in self.counts):
                    continue
                ms = {t: round(statistics.median(b.ms[t]), 3) for t in self.counts}
                by_rows[str(size)] = {"ms": {str(t): v for t, v in ms.items()},
                                      "threads": min(ms, key=ms.get)}
        return {"counts": list(self.counts), "adaptive": self.adaptive, "by_rows": by_rows}
