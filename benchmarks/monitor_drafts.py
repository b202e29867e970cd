"""What the drafts the monitor changes cost at p50, whatever its analysis costs: a floor
under the defaults' latency check (their p50 at most ``draft=none, monitor=off``'s).

The reporting set (or the traces given) replayed with ``draft=none``, the monitor on and
off, event by event (``replay_together``). Prints:

- how many first drafts differ, and of those how many took more, fewer or as many
  forwards with the monitor on;
- the forwards where the drafts are the same and where they differ (a mean is moved by a
  few drafts that run to the budget);
- each side's p50, and the floor: off's latencies with each completion whose drafts differ
  scaled by on's forwards over off's, its p50 against off's. That is the monitor's p50
  with its drafts and none of its analysis.

    python benchmarks/monitor_drafts.py [TRACE ...]
"""
from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

from inkling.completion.engine import Engine
from inkling.completion.options import InklingOptions
from inkling.evaluation.replay import Replayer, replay_together
from inkling.evaluation.syntax_check import SyntaxChecker
from inkling.evaluation.trace_file import read_trace

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_traces import set_paths  # noqa: E402


def floor(pairs: list[tuple]) -> float:
    """p50 of off's latencies, each scaled by on's forwards over off's where the first
    drafts differ; ``pairs``: (on, off) CompletionRecords of one completion."""
    return statistics.median(off.latency_ms * (on.forwards / off.forwards)
                             if on.drafts[:1] != off.drafts[:1] else off.latency_ms
                             for on, off in pairs)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("traces", nargs="*")
    args = ap.parse_args()
    base = InklingOptions().merged({"completion": {"draft": "none"}})
    runtime, checker = Engine(base).load_model(), SyntaxChecker()
    replayers = [Replayer(base.merged({"completion": {"monitor": m}}), runtime, checker)
                 for m in ("on", "off")]
    pairs = []
    for path in args.traces or set_paths("reporting"):
        on, off = replay_together(replayers, read_trace(path))
        pairs += zip(on.completions, off.completions)
        print(f"  {Path(path).name}", file=sys.stderr)
    differ = [(a, b) for a, b in pairs if a.drafts[:1] != b.drafts[:1]]
    same = [(a, b) for a, b in pairs if a.drafts[:1] == b.drafts[:1]]
    print(f"{len(pairs)} completions; first drafts differ in {len(differ)}: on took more "
          f"forwards in {sum(a.forwards > b.forwards for a, b in differ)}, fewer in "
          f"{sum(a.forwards < b.forwards for a, b in differ)}, as many in "
          f"{sum(a.forwards == b.forwards for a, b in differ)}")
    for name, group in (("the same", same), ("different", differ)):
        print(f"forwards where the drafts are {name}: on {sum(a.forwards for a, _ in group)}, "
              f"off {sum(b.forwards for _, b in group)}")
    p50_on = statistics.median(a.latency_ms for a, _ in pairs)
    p50_off = statistics.median(b.latency_ms for _, b in pairs)
    low = floor(pairs)
    print(f"p50: on {p50_on:.2f} ms, off {p50_off:.2f} ms (x{p50_on / p50_off:.3f})")
    print(f"floor, the monitor's drafts without its analysis: {low:.2f} ms "
          f"(x{low / p50_off:.3f} of off)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
