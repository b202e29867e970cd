"""What a call costs from cold caches: the floor under a decoding step's analysis.

Between two decoding steps the forward reads the model's weights through the caches, so
whatever the step runs next is read back from memory (``monitor_steps.py --pollute``
times the monitor's steps that way). This times a few calls, each alone, warm (right
after the same call) and cold (right after ``--mb`` MB were read), in turn:

- ``empty call``: a Python function that returns its argument (the interpreter's call
  path, which any Python after a forward pays);
- ``str.rstrip``: one call of a small C routine (what one compiled step of the monitor
  would be, at the least);
- ``re.search``: one regular expression's search (the monitor's sites run a dozen);
- ``scanner advance``: ``ScanState.advance`` by a short text (a comma and a name among
  a call's arguments: Python, with its regular expressions and new states).

    python benchmarks/cold_calls.py [--mb 16] [--calls 400]

Prints each call's p50 warm and cold in us and their ratio.
"""
from __future__ import annotations

import argparse
import re
import statistics
import sys
import time

import numpy as np

from inkling.analysis.python_scanner import ScanState

LINE = "        return self.context.masks.read_mask(names + (extra,) if extra"
SPECIAL = re.compile(r"""["'#\n()\[\]{},\\]""")
STATE = ScanState().advance("def f(self, names):\n    x = self.context.masks.read_mask(names")


def _empty(x):
    return x


CALLS = {
    "empty call": lambda: _empty(1),
    "str.rstrip": lambda: LINE.rstrip("abcdefghijklmnopqrstuvwxyz_."),
    "re.search": lambda: SPECIAL.search(LINE, 10),
    "scanner advance": lambda: STATE.advance(", extra"),
}


def timed(call, reads: np.ndarray | None, n: int) -> float:
    """p50 seconds of ``call``, each time after ``reads`` were read (None: after itself)."""
    spent = []
    clock = time.perf_counter
    for _ in range(n):
        if reads is not None:
            reads.sum()
        else:
            call()
        t0 = clock()
        call()
        spent.append(clock() - t0)
    return statistics.median(spent)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=16.0, help="MB read before a cold call")
    ap.add_argument("--calls", type=int, default=400, help="calls timed each way")
    args = ap.parse_args()
    reads = np.ones(int(args.mb * (1 << 20)), np.uint8)
    for name, call in CALLS.items():
        warm = cold = float("inf")
        for _ in range(2):                           # in turn, each way's best p50 kept
            warm = min(warm, timed(call, None, args.calls // 2))
            cold = min(cold, timed(call, reads, args.calls // 2))
        print(f"{name:16} warm {warm * 1e6:7.2f} us  cold {cold * 1e6:7.2f} us  "
              f"x{cold / warm:5.1f}")
    print(f"cold: {args.mb:g} MB read before each call")
    return 0


if __name__ == "__main__":
    sys.exit(main())
