"""Several drafts: `greedy`, `branches`, `superposed`, `sequential` and `beam` side by side.

    python benchmarks/decoders.py [--model PATH] [--drafts 3]

Replays the sample traces and retype traces of held-out standard-library files with
k drafts per completion and each decoder, event by event (``replay_together``), and
prints latency p50/p95, exact_line (first draft), exact_line_any, and distinct drafts per
completion.
"""
from __future__ import annotations

import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import bench_traces, describe, load, options, parser, replay_each, write_json  # noqa: E402

from inkling.evaluation.replay_result import summarise  # noqa: E402

DECODERS = ("greedy", "branches", "superposed", "sequential", "beam")


def main() -> int:
    ap = parser(__doc__)
    ap.add_argument("--drafts", type=int, default=3)
    ap.add_argument("--max-functions", type=int, default=4)
    ap.add_argument("--draft", default="none", choices=("none", "prompt-lookup", "suffix"),
                    help="retrieval drafting for every decoder (per branch)")
    ap.add_argument("--datastore", default="corpus",
                    help="none, corpus or a folder (superposed n-grams, suffix drafts)")
    ap.add_argument("--decoders", default=",".join(DECODERS),
                    help="which decoders, comma-separated (greedy always runs)")
    args = ap.parse_args()
    traces = bench_traces(args, 0, args.max_functions)
    base = options(args, completion={"drafts": args.drafts, "automatic_drafts": args.drafts,
                                     "draft": args.draft, "datastore": args.datastore})
    engine, runtime = load(base)
    decoders = ["greedy"] + [d for d in DECODERS[1:] if d in args.decoders.split(",")]
    print(f"replaying {describe(traces)} with k = {args.drafts} and {', '.join(decoders)}")
    datastore = engine.build_datastore() if args.datastore != "none" else None
    results = replay_each({d: base.merged({"completion": {"decoder": d}}) for d in decoders},
                          traces, runtime, datastore)
    s = {d: summarise(results[d]) for d in decoders}
    distinct = {d: statistics.mean(len({x.rstrip() for x in c.drafts if x.strip()})
                                   for t in results[d] for c in t.completions)
                for d in decoders}
    print(f"\nmodel {runtime.path.name}, {runtime.device}, k = {args.drafts}, draft {args.draft}, "
          f"datastore {args.datastore}")
    print("decoder      lat p50  lat p95  exact_line  exact_any  distinct  tok/fwd")
    for d in decoders:
        r = s[d]
        print(f"{d:11} {r['latency_ms']['p50']:>8.1f} {r['latency_ms']['p95']:>8.1f} "
              f"{100 * r['exact_line']:>11.1f} {100 * r['exact_line_any']:>10.1f} "
              f"{distinct[d]:>9.2f} {r['draft_throughput']['tokens_per_forward']:>8.2f}")
    g = s["greedy"]["latency_ms"]["p50"]
    for d in decoders[1:]:
        print(f"{d} latency p50 / greedy: {s[d]['latency_ms']['p50'] / g:.2f}"
              f"  (target {'about 3' if d == 'sequential' else '<= 1.5'})")
    for d in [d for d in decoders if d in ("branches", "superposed", "beam")]:
        gain = 100 * (s[d]["exact_line_any"] - s["greedy"]["exact_line"])
        print(f"{d} exact_line_any - greedy exact_line: {gain:+.1f} points (target >= +5); "
              f"distinct drafts {distinct[d]:.2f} of {args.drafts} (target >= 2.5)")
    write_json(args.json, {d: {"latency_ms_p50": s[d]["latency_ms"]["p50"],
                               "latency_ms_p95": s[d]["latency_ms"]["p95"],
                               "exact_line": s[d]["exact_line"],
                               "exact_line_any": s[d]["exact_line_any"],
                               "distinct_drafts": distinct[d]} for d in decoders})
    return 0


if __name__ == "__main__":
    sys.exit(main())
