"""Edit-consistent cache: `full`, `pie` and `naive` side by side in one run.

    python benchmarks/cache_modes.py [--model PATH] [--min-lines 300] [--max-functions 4]

Replays the sample traces and retype traces of held-out standard-library files of at
least 300 lines with each cache mode, event by event (``replay_together``: each edit
and completion in every mode's session before the next, so machine noise hits all modes
alike), and prints per mode: prefill tokens per completion, first_token_ms p50/p95,
completion latency p50/p95, edit latency p50, exact_line, stale tokens and refreshes;
then the ratios the issue sets targets for.
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import bench_traces, describe, load, options, parser, replay_each, write_json  # noqa: E402

from inkling.evaluation.replay_result import summarise  # noqa: E402

MODES = ("full", "pie", "naive")


def row(mode: str, s: dict) -> str:
    return (f"{mode:6} {s['prefill_tokens']['per_completion']:>9.1f} "
            f"{s['first_token_ms']['p50']:>8.1f} {s['first_token_ms']['p95']:>8.1f} "
            f"{s['latency_ms']['p50']:>8.1f} {s['latency_ms']['p95']:>8.1f} "
            f"{s['edit_latency_ms']['p50']:>7.3f} {100 * s['exact_line']:>6.1f} "
            f"{s['stale_tokens']['mean']:>7.1f} {s['refreshes']:>5}")


CATEGORIES = ("first of a trace", "cursor jumps", "typing")


def _categories(results) -> list[str]:
    """Each completion's kind, from the ``pie`` replay: the first of its trace (a cold
    cache), one after the cursor jumped to text the cache never held (``pie`` prefilled
    more than 150 tokens), or typing (the rest). The modes replay the same traces, so
    completion i is the same request in every mode."""
    out = []
    for r in results:
        for i, c in enumerate(r.completions):
            out.append(CATEGORIES[0] if i == 0 else
                       CATEGORIES[1] if c.prefill_tokens > 150 else CATEGORIES[2])
    return out


def _prefill_by_kind(results, kinds: list[str]) -> dict[str, float]:
    """Prefill tokens of each kind of completion, divided by all completions."""
    tokens = [c.prefill_tokens for r in results for c in r.completions]
    return {k: sum(t for t, kind in zip(tokens, kinds) if kind == k) / max(1, len(tokens))
            for k in CATEGORIES}


def main() -> int:
    ap = parser(__doc__)
    ap.add_argument("--min-lines", type=int, default=300)
    ap.add_argument("--max-functions", type=int, default=4)
    ap.add_argument("--stale-threshold", type=float, default=0.95)
    ap.add_argument("--fim-order", default="auto", choices=("auto", "spm", "psm"))
    args = ap.parse_args()
    traces = bench_traces(args, args.min_lines, args.max_functions)
    print(f"replaying {describe(traces)} with cache modes {', '.join(MODES)}")
    base = options(args, completion={"fim_order": args.fim_order},
                   cache={"stale_threshold": args.stale_threshold})
    _, runtime = load(base)
    results = replay_each({m: base.merged({"cache": {"mode": m}}) for m in MODES}, traces, runtime)
    summaries = {mode: summarise(results[mode]) for mode in MODES}
    order = args.fim_order if args.fim_order != "auto" else runtime.fim_order
    print(f"\nmodel {runtime.path.name}, {runtime.device}, {order} prompts, "
          f"stale threshold {args.stale_threshold}")
    print("mode   prefill/c  ftok p50 ftok p95  lat p50  lat p95 edit p50  exact   stale  refr")
    for mode in MODES:
        print(row(mode, summaries[mode]))
    f, p, n = (summaries[m] for m in MODES)
    print(f"\npie prefill / full prefill       {p['prefill_tokens']['sum'] / max(1, f['prefill_tokens']['sum']):.3f}  (target <= 0.1)")
    print(f"pie first_token p50 / full      {p['first_token_ms']['p50'] / f['first_token_ms']['p50']:.3f}  (target <= 0.333)")
    print(f"pie exact_line - full           {100 * (p['exact_line'] - f['exact_line']):+.1f} points  (target within 1)")
    print(f"naive exact_line - pie          {100 * (n['exact_line'] - p['exact_line']):+.1f} points  (naive should be worse)")
    kinds = _categories(results["pie"])
    by_kind = {m: _prefill_by_kind(results[m], kinds) for m in MODES}
    counts = {k: kinds.count(k) for k in CATEGORIES}
    print(f"\nwhere the prefill goes (tokens per completion over all {len(kinds)}; the same "
          "completions in every mode, sorted by what pie did):")
    print(f"{'mode':6} " + "".join(f"{k + f' ({counts[k]})':>24}" for k in CATEGORIES))
    for m in MODES:
        print(f"{m:6} " + "".join(f"{by_kind[m][k]:>24.1f}" for k in CATEGORIES))
    print(f"{'pie/full':6} " + "".join(
        f"{by_kind['pie'][k] / max(1e-9, by_kind['full'][k]):>24.3f}" for k in CATEGORIES))
    print(f"sync_ok: {all(s['sync_ok'] for s in summaries.values())}")
    write_json(args.json, {
        "pie_prefill_over_full": p['prefill_tokens']['sum'] / max(1, f['prefill_tokens']['sum']),
        "pie_first_token_p50_over_full": p['first_token_ms']['p50'] / f['first_token_ms']['p50'],
        **{f"{m}.{k}": summaries[m][k] for m in MODES for k in ("exact_line", "sync_ok")},
        **{f"{m}.latency_ms_p50": summaries[m]["latency_ms"]["p50"] for m in MODES},
        **{f"{m}.first_token_ms_p50": summaries[m]["first_token_ms"]["p50"] for m in MODES}})
    return 0


if __name__ == "__main__":
    sys.exit(main())
