"""Monitor-guided decoding: `--monitor off` and `on` side by side in one run.

    python benchmarks/monitor.py [--model PATH] [--max-functions 4]

Replays the sample traces and retype traces of held-out standard-library files with
the monitor off and on, event by event (``replay_together``: each edit and completion
in both sessions before the next, the order turning), and prints shown (first drafts
that show something), the syntax guard's cuts, undefined_names and syntax_valid over
shown drafts (with their counts), exact_line, identifier_match and completion latency
(p50, mean), then the targets: the monitor may lower shown by ``SHOWN_MARGIN`` at most.
The mask cost per step is measured by benchmarks/monitor_cost.py.
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
from inkling.evaluation.replay import Replayer, replay_together  # noqa: E402
from inkling.evaluation.replay_result import summarise  # noqa: E402
from inkling.evaluation.syntax_check import SyntaxChecker  # noqa: E402

MODES = ("off", "on")
SHOWN_MARGIN = 0.02     # the monitor may lower the share of shown drafts by 2 points at most


def _pct(value) -> str:
    return "-" if value is None else f"{100 * value:.1f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="")
    ap.add_argument("--max-functions", type=int, default=4)
    ap.add_argument("--json", help="write the per-mode summaries here")
    args = ap.parse_args()
    traces = sample_traces() + held_out_traces(0, args.max_functions)
    print(f"replaying {describe(traces)} with the monitor off and on")
    base = InklingOptions().merged({"model": {"path": args.model}})
    runtime = Engine(base).load_model()
    checker = SyntaxChecker()
    results = {m: [] for m in MODES}
    for i, trace in enumerate(traces):
        replayers = [Replayer(base.merged({"completion": {"monitor": m}}), runtime, checker)
                     for m in MODES]
        for mode, result in zip(MODES, replay_together(replayers, trace)):
            results[mode].append(result)
        print(f"  [{i + 1}/{len(traces)}] {trace.name}", file=sys.stderr)
    s = {m: summarise(results[m]) for m in MODES}
    print(f"\nmodel {runtime.path.name}, {runtime.device}")
    print("monitor  shown  cut  emptied  undefined (n)  syntax_valid (n)  exact_line  "
          "ident_match (n)  lat p50  lat mean")
    for m in MODES:
        r = s[m]
        print(f"{m:8} {_pct(r['shown']):>5} {_pct(r['guard_cut']):>4} "
              f"{_pct(r['guard_emptied']):>8} {_pct(r['undefined_names']):>9} "
              f"({r['undefined_names_n']}) {_pct(r['syntax_valid']):>12} ({r['syntax_valid_n']}) "
              f"{_pct(r['exact_line']):>11} {_pct(r['identifier_match']):>11} "
              f"({r['identifier_triggers']}) {r['latency_ms']['p50']:>8.1f} "
              f"{r['latency_ms']['mean']:>9.1f}  failures {r['analysis_failures']}")
    off, on = s["off"], s["on"]
    ratio = on["undefined_names"] / off["undefined_names"] if off["undefined_names"] else 0.0
    print(f"\nshown on - off                  {100 * (on['shown'] - off['shown']):+.1f} points "
          f"(target >= {-100 * SHOWN_MARGIN:+.0f})")
    print(f"undefined_names on / off        {ratio:.2f}  (shown drafts; target <= 0.5)")
    print(f"syntax_valid with the monitor   {on['syntax_valid']:.3f}, off {off['syntax_valid']:.3f}"
          "  (shown drafts; target > off: a kept draft may be unfinished)")
    print(f"exact_line on - off             {100 * (on['exact_line'] - off['exact_line']):+.1f} points (target >= 0)")
    print(f"identifier_match on - off       "
          f"{100 * ((on['identifier_match'] or 0) - (off['identifier_match'] or 0)):+.1f} points (target >= 0)")
    print(f"latency overhead (mean)         "
          f"{100 * (on['latency_ms']['mean'] / off['latency_ms']['mean'] - 1):+.1f}% (target <= 15%)")
    if args.json:
        Path(args.json).write_text(json.dumps(s, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
