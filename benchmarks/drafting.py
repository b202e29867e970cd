"""Retrieval drafting: `none`, `prompt-lookup` and `suffix` side by side in one run.

    python benchmarks/drafting.py [--model PATH] [--max-functions 4] [--datastore corpus]

Replays the sample traces and retype traces of held-out standard-library files with
each drafting mode, event by event (``replay_together``: each edit and completion in
every mode's session before the next, the order turning), and prints tokens per
forward, forwards per completion, completion latency p50/p95 and exact_line, then the
target ratios.
`suffix` searches the document, the workspace, accepted and recent suggestions, the
datastore (built once; `corpus` leaves the held-out files out, so the files typed
here are not in it) and the model datastore (the model's own continuations at
positions of the same training files). Last, what each `suffix` drafting step cost as
the replay took it (``Completion.draft_ms``): all sources, between forwards.
"""
from __future__ import annotations

import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import bench_traces, describe, load, options, parser, replay_each, write_json  # noqa: E402

from inkling.evaluation.replay_result import summarise  # noqa: E402

MODES = ("none", "prompt-lookup", "suffix")


def main() -> int:
    ap = parser(__doc__)
    ap.add_argument("--min-lines", type=int, default=0)
    ap.add_argument("--max-functions", type=int, default=4)
    ap.add_argument("--cache", default="full", choices=("full", "pie", "naive"))
    ap.add_argument("--datastore", default="corpus", help="none, corpus or a folder")
    ap.add_argument("--model-datastore", default="auto",
                    help="auto (the model folder's own), none or a file")
    args = ap.parse_args()
    traces = bench_traces(args, args.min_lines, args.max_functions)
    print(f"replaying {describe(traces)} with drafting {', '.join(MODES)}")
    base = options(args, cache={"mode": args.cache},
                   completion={"datastore": args.datastore,
                               "model_datastore": args.model_datastore})
    engine, runtime = load(base)
    datastore = engine.build_datastore()          # one for every trace (suffix drafting)
    print(datastore.summary() if datastore else "no datastore")
    model_store = engine.sources.model_datastore(runtime, args.model_datastore)   # its own
    print(model_store.summary() if model_store else "no model datastore")
    results = replay_each({m: base.merged({"completion": {"draft": m}}) for m in MODES},
                          traces, runtime, datastore)
    s = {mode: summarise(results[mode]) for mode in MODES}
    print(f"\nmodel {runtime.path.name}, {runtime.device}, cache {args.cache}")
    print("mode           tok/fwd  fwd/compl  lat p50  lat p95  exact_line")
    for mode in MODES:
        r = s[mode]
        print(f"{mode:14} {r['tokens_per_forward']:>7.2f} {r['forwards']['per_completion']:>10.2f} "
              f"{r['latency_ms']['p50']:>8.1f} {r['latency_ms']['p95']:>8.1f} "
              f"{100 * r['exact_line']:>10.1f}")
    none, pl, sx = (s[m] for m in MODES)
    print(f"\nsuffix tokens/forward            {sx['tokens_per_forward']:.2f}  (target >= 2.5)")
    print(f"suffix / prompt-lookup tok/fwd   {sx['tokens_per_forward'] / pl['tokens_per_forward']:.2f}  (target >= 1.2)")
    print(f"suffix / none latency p50        {sx['latency_ms']['p50'] / none['latency_ms']['p50']:.2f}  (target <= 0.6)")
    same = all(a.drafts == b.drafts == c.drafts for ta, tb, tc in zip(*results.values())
               for a, b, c in zip(ta.completions, tb.completions, tc.completions))
    print(f"identical suggestions in all modes: {same}; exact_line "
          f"{100 * none['exact_line']:.1f} / {100 * pl['exact_line']:.1f} / {100 * sx['exact_line']:.1f}")
    print("\nwhere a completion's time goes (p50 of each part over all completions):")
    print("mode           latency  model ms  forwards  tokens  the rest (prompt, drafting, "
          "monitor)")
    for mode in MODES:
        recs = [c for r in results[mode] for c in r.completions]
        p50 = [statistics.median(f(c) for c in recs) for f in (
            lambda c: c.latency_ms, lambda c: c.model_ms, lambda c: c.forwards,
            lambda c: c.tokens, lambda c: c.latency_ms - c.model_ms)]
        print(f"{mode:14} {p50[0]:>7.1f} {p50[1]:>9.1f} {p50[2]:>9.0f} {p50[3]:>7.0f} "
              f"{p50[4]:>9.1f}")
    recs_sx = [c for r in results["suffix"] for c in r.completions]
    steps = sorted(ms for r in results["suffix"] for c in r.completions for ms in c.draft_ms)
    if steps:
        q = statistics.quantiles(steps, n=100, method="inclusive")
        print(f"\nsuffix drafting steps as the replay takes them (every source searched at "
              f"the step, between forwards): {len(steps)} steps, p50 {q[49]:.3f} ms, "
              f"p95 {q[94]:.3f} ms, mean {statistics.fmean(steps):.3f} ms "
              f"({sum(steps) / len(recs_sx):.1f} ms per completion)")
    write_json(args.json, {"identical_suggestions": same, **{m: {
        "tokens_per_forward": s[m]["tokens_per_forward"], "exact_line": s[m]["exact_line"],
        "latency_ms_p50": s[m]["latency_ms"]["p50"], "latency_ms_p95": s[m]["latency_ms"]["p95"]}
        for m in MODES}})
    return 0


if __name__ == "__main__":
    sys.exit(main())
