"""The replay sharded over Ray: wall time of the same replay on 1, 2, ... local actors.

    python benchmarks/ray_scaling.py [--model PATH] [--actors 1,2] [--limit 8]

Replays the sample traces and retype traces of held-out standard-library files on a
local Ray instance (one CPU per actor), once per actor count, and prints the wall time
of each run (actors started and model loaded included, since a user waits for those
too; the Ray instance's own start is not), the speed-up over one actor and the
efficiency (speed-up / actors). The per-trace metrics of every run are compared with
the first run's: they must be the same.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_traces import describe, held_out_traces, sample_traces  # noqa: E402

from inkling.completion.options import InklingOptions  # noqa: E402
from inkling.evaluation.ray_replay import RayOptions, import_ray, replay_on_ray  # noqa: E402
from inkling.evaluation.replay_result import summarise  # noqa: E402

COMPARED = ("exact_line", "edit_similarity", "tokens_per_forward", "sync_ok", "completions")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="")
    ap.add_argument("--actors", default="1,2", help="actor counts, comma-separated")
    ap.add_argument("--limit", type=int, default=8, help="held-out traces (0: all)")
    args = ap.parse_args()
    ray = import_ray()
    counts = [int(c) for c in args.actors.split(",")]
    traces = sample_traces() + held_out_traces(limit=args.limit)
    print(f"{describe(traces)}; {os.cpu_count()} CPUs on this machine")
    options = InklingOptions().merged({"model": {"path": args.model}})
    ray.init(num_cpus=max(counts), include_dashboard=False, log_to_driver=False,
             logging_level="ERROR", configure_logging=False)
    rows, reference = [], None
    try:
        for n in counts:
            t0 = time.perf_counter()
            run = replay_on_ray(options, traces, RayOptions(actors=n))
            wall = time.perf_counter() - t0
            metrics = [{k: summarise([r])[k] for k in COMPARED} for r in run.results]
            reference = reference or metrics
            rows.append((n, wall, metrics == reference))
    finally:
        ray.shutdown()
    base = rows[0][1]
    print(f"{'actors':>6} {'wall s':>8} {'speed-up':>9} {'efficiency':>11} same metrics")
    for n, wall, same in rows:
        speedup = base / wall
        print(f"{n:>6} {wall:>8.1f} {speedup:>9.2f} {speedup / n:>11.2f} {same}")
    return 0 if all(same for *_, same in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
