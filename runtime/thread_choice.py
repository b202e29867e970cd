"""How many CPU threads a forward runs on: measured, where the choice cannot change a bit.
With ``model.threads`` 0 one-row native steps time both counts; the faster runs, the slower is
retried now and then. Only native forwards, whose sums do not depend on the count, are chosen for;
counters are under a lock: docs/decisions/thread-choice.md."""
from __future__ import annotations

import contextlib
import statistics
import threading
from collections import deque

import torch

WARMUP = 3                             # one-row forwards a count runs before comparing
WINDOW = 9                             # recent one-row forwards per count (a burst moves no median)
PROMISING = 0.85                       # a turn under this share of the best median: again at once
EXPLORE_EVERY = 16                     # at most one forward in this many runs the slower count
EXPLORE_SHARE = 0.03                   # what those turns may cost, of the one-row forwards'


class ThreadChoice:
    """``pick(rows)`` before a chosen-for forward, ``record`` after; ``fixed()`` for any other."""

    def __init__(self, base: int, most: int = 0):
        self.base = base                                   # threads of unchosen forwards
        self.counts = (base, most) if most > base else (base,)   # the counts compared
        self._ms: dict[int, deque] = {}                    # threads -> recent one-row ms
        self._best = base                                  # the count chosen so far
        self._spent = 0.0                                  # ms of all one-row forwards
        self._explored = 0.0                               # what turns of the slower cost more
        self._since = 0                                    # one-row forwards since its last turn
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
        if rows > 1:
            return self._best
        with self._lock:
            runs = {t: self._ms.get(t, ()) for t in self.counts}
            short = [t for t in self.counts if len(runs[t]) < WARMUP]
            if short:                                      # each count measured first
                return min(short, key=lambda t: len(runs[t]))
            median = {t: statistics.median(r) for t, r in runs.items()}
            best = self._best = min(self.counts, key=median.get)
            other = next(t for t in self.counts if t != best)
            gap = median[other] - median[best]
            self._since += 1
            promising = runs[other][-1] < PROMISING * median[best]   # its last turn won
            if promising or (self._since >= EXPLORE_EVERY
                             and self._explored + gap <= EXPLORE_SHARE * self._spent):
                self._explored += gap
                self._since = 0
                return other
            return best

    def record(self, rows: int, threads: int, ms: float) -> None:
        """A chosen-for forward of ``rows`` rows took ``ms`` on ``threads`` (one-row ones count)."""
        if not self.adaptive or rows != 1:
            return
        with self._lock:
            self._ms.setdefault(threads, deque(maxlen=WINDOW)).append(ms)
            self._spent += ms

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
        """For ``inkling/stats``: the counts compared, the one in use, their one-row median ms."""
        with self._lock:
            ms = {str(t): round(statistics.median(r), 3) for t, r in self._ms.items() if r}
            return {"counts": list(self.counts), "adaptive": self.adaptive,
                    "threads": self._best if self.adaptive else self.fixed(),
                    "one_row_ms": ms}
