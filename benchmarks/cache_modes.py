"""Edit-consistent cache: `full`, `pie` and `naive` side by side in one run.

    python benchmarks/cache_modes.py [--model PATH] [--min-lines 300] [--max-functions 4]

Replays the sample traces and retype traces of held-out standard-library files of at
least 300 lines with each cache mode, trace by trace in turn (so machine noise hits
all modes alike), and prints per mode: prefill tokens per completion, first_token_ms
p50/p95, completion latency p50/p95, edit latency p50, exact_line, stale tokens and
refreshes; then the ratios the issue sets targets for.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_traces import describe, held_out_traces, sample_traces  # noqa: E402

from inkling.completion.engine import Engine  # noqa: E402
from inkling.completion.options import InklingOptions  # noqa: E402
from inkling.lsp.replay import Replayer  # noqa: E402
from inkling.lsp.replay_result import summarise  # noqa: E402
from inkling.lsp.syntax_check import SyntaxChecker  # noqa: E402

MODES = ("full", "pie", "naive")


def row(mode: str, s: dict) -> str:
    return (f"{mode:6} {s['prefill_tokens']['per_completion']:>9.1f} "
            f"{s['first_token_ms']['p50']:>8.1f} {s['first_token_ms']['p95']:>8.1f} "
            f"{s['latency_ms']['p50']:>8.1f} {s['latency_ms']['p95']:>8.1f} "
            f"{s['edit_latency_ms']['p50']:>7.3f} {100 * s['exact_line']:>6.1f} "
            f"{s['stale_tokens']['mean']:>7.1f} {s['refreshes']:>5}")


def _warm_prefill(results) -> tuple[float, float, int, float]:
    """Prefill tokens per completion from each trace's first completion (a cold cache),
    from completions that prefilled more than 150 tokens (the cursor jumped to text the
    cache never held) and from the rest (typing), all divided by the completion count."""
    cold = jumps = typing = 0
    n = 0
    for r in results:
        for i, c in enumerate(r.completions):
            n += 1
            if i == 0:
                cold += c.prefill_tokens
            elif c.prefill_tokens > 150:
                jumps += c.prefill_tokens
            else:
                typing += c.prefill_tokens
    n = max(1, n)
    return cold / n, jumps / n, n, typing / n


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="")
    ap.add_argument("--min-lines", type=int, default=300)
    ap.add_argument("--max-functions", type=int, default=4)
    ap.add_argument("--stale-threshold", type=float, default=0.95)
    ap.add_argument("--fim-order", default="auto", choices=("auto", "spm", "psm"))
    ap.add_argument("--json", help="write the per-mode summaries here")
    args = ap.parse_args()
    traces = sample_traces() + held_out_traces(args.min_lines, args.max_functions)
    print(f"replaying {describe(traces)} with cache modes {', '.join(MODES)}")
    base = InklingOptions().merged({"model": {"path": args.model},
                                    "completion": {"fim_order": args.fim_order},
                                    "cache": {"stale_threshold": args.stale_threshold}})
    runtime = Engine(base).load_model()
    checker = SyntaxChecker()
    results = {mode: [] for mode in MODES}
    for i, trace in enumerate(traces):
        for mode in MODES:
            options = base.merged({"cache": {"mode": mode}})
            results[mode].append(Replayer(options, runtime, checker).replay(trace))
        print(f"  [{i + 1}/{len(traces)}] {trace.name}", file=sys.stderr)
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
    warm = {m: _warm_prefill(results[m]) for m in MODES}
    print(f"\nwhere the prefill goes (tokens per completion, all {warm['full'][2]} completions):")
    print("mode   first of a trace  cursor jumps (>150 new)  typing (the rest)")
    for m in MODES:
        cold, jumps, _, typing = warm[m]
        print(f"{m:6} {cold:>16.1f} {jumps:>24.1f} {typing:>18.1f}")
    print(f"pie / full without each trace's first completion   "
          f"{(warm['pie'][1] + warm['pie'][3]) / max(1e-9, warm['full'][1] + warm['full'][3]):.3f}")
    print(f"sync_ok: {all(s['sync_ok'] for s in summaries.values())}")
    if args.json:
        Path(args.json).write_text(json.dumps(summaries, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
