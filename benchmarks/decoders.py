"""Several drafts: `greedy`, `branches`, `superposed`, `sequential` and `beam` side by side.

    python benchmarks/decoders.py [--model PATH] [--drafts 3]

Replays the sample traces and retype traces of held-out standard-library files with
k drafts per completion and each decoder, event by event (``replay_together``), and
prints latency p50/p95, exact_line (first draft), exact_line_any, and distinct drafts per
completion.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_traces import describe, held_out_traces, sample_traces  # noqa: E402

from inkling.completion.engine import Engine  # noqa: E402
from inkling.completion.options import InklingOptions  # noqa: E402
from inkling.evaluation.replay import Replayer, replay_together  # noqa: E402
from inkling.evaluation.replay_result import summarise  # noqa: E402
from inkling.evaluation.syntax_check import SyntaxChecker  # noqa: E402

DECODERS = ("greedy", "branches", "superposed", "sequential", "beam")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="")
    ap.add_argument("--drafts", type=int, default=3)
    ap.add_argument("--max-functions", type=int, default=4)
    ap.add_argument("--draft", default="none", choices=("none", "prompt-lookup", "suffix"),
                    help="retrieval drafting for every decoder (per branch)")
    ap.add_argument("--datastore", default="corpus",
                    help="none, corpus or a folder (superposed n-grams, suffix drafts)")
    ap.add_argument("--decoders", default=",".join(DECODERS),
                    help="which decoders, comma-separated (greedy always runs)")
    ap.add_argument("--json", help="write the per-decoder summaries here")
    args = ap.parse_args()
    traces = sample_traces() + held_out_traces(0, args.max_functions)
    base = InklingOptions().merged({"model": {"path": args.model},
                                    "completion": {"drafts": args.drafts,
                                                   "automatic_drafts": args.drafts,
                                                   "draft": args.draft,
                                                   "datastore": args.datastore}})
    engine = Engine(base)
    runtime = engine.load_model()
    decoders = ["greedy"] + [d for d in DECODERS[1:] if d in args.decoders.split(",")]
    print(f"replaying {describe(traces)} with k = {args.drafts} and {', '.join(decoders)}")
    datastore = engine.build_datastore() if args.datastore != "none" else None
    checker = SyntaxChecker()
    results = {d: [] for d in decoders}
    for i, trace in enumerate(traces):
        replayers = [Replayer(base.merged({"completion": {"decoder": d}}), runtime, checker,
                              datastore) for d in decoders]
        for dec, result in zip(decoders, replay_together(replayers, trace)):
            results[dec].append(result)
        print(f"  [{i + 1}/{len(traces)}] {trace.name}", file=sys.stderr)
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
    if args.json:
        Path(args.json).write_text(json.dumps({"summaries": s, "distinct": distinct}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
