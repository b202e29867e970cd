"""How many CPU threads a forward runs on: measured, where the choice cannot change a bit.

A small model's one-row step is bound by reading its weights (the bundled model's 25 MB
come from memory at every token). On an idle second core a second thread reads half of
them: the bundled model's median completion took 22 ms instead of 29 on this 2-core
machine. But where another process holds that core every step waits for it: the same
completions took 55 ms on two threads against 28 on one beside a busy process of the same
priority (a process at nice 19, such as the model's own training, yields the core and
costs little). Neither count is right for a person's machine, whose load comes and goes,
so with ``model.threads`` 0 a small model's native forward measures both on its one-row
steps (the most frequent forward, and the one a busy core slows most):

- each count runs ``WARMUP`` one-row forwards first; then the count whose recent ones (the
  median of the last ``WINDOW``) were faster runs every native forward, and the other one
  one-row forward now and then, so that a change of load is seen: at most one in
  ``EXPLORE_EVERY``, and only while what its turns cost beyond the faster count's (by the
  medians) stays within ``EXPLORE_SHARE`` of the one-row forwards' time (two threads
  beside a busy process cost 4 to 10 times one thread's: they are then tried about once
  in a hundred forwards); a turn clearly faster than the other count's median
  (``PROMISING``) is tried again at once, so a core freed is taken within a few forwards;
- a forward of several rows (a draft tree, a prompt chunk) runs on the count the one-row
  steps chose: on an idle core two threads were as fast or faster at every row count
  measured (2 to 64 rows: 0.67 to 1.01 of one thread's time), and beside a busy process
  slower at every one, so a choice per row count bought nothing but more switches and
  more turns of the slower count;
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

import torch

WARMUP = 3                             # one-row forwards a count runs before comparing
WINDOW = 9                             # recent one-row forwards per count compared: a
                                       # burst of load of a few forwards moves no median
PROMISING = 0.85                       # a turn this much faster than the other count's
                                       # median is tried again at once
EXPLORE_EVERY = 16                     # at most one forward in this many runs the slower count
EXPLORE_SHARE = 0.03                   # what those turns may cost, of the one-row forwards'


class ThreadChoice:
    """``pick(rows)`` before a forward that may be chosen for, ``record`` after it;
    ``fixed()`` for every other forward (``use`` sets torch's count)."""

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
        """A chosen-for forward of ``rows`` rows took ``ms`` on ``threads`` (one-row
        forwards are compared)."""
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
        """For ``inkling/stats`` and the replay's config: the counts compared (one when
        fixed), the count the native forwards run on, and each count's recent median
        ms for a one-row forward (once measured)."""
        with self._lock:
            ms = {str(t): round(statistics.median(r), 3) for t, r in self._ms.items() if r}
            return {"counts": list(self.counts), "adaptive": self.adaptive,
                    "threads": self._best if self.adaptive else self.fixed(),
                    "one_row_ms": ms}
