"""Monitor-guided decoding: `--monitor off` and `on` side by side in one run.

    python benchmarks/monitor.py [--model PATH] [--max-functions 4]

Replays the sample traces and retype traces of held-out standard-library files with
the monitor off and on, trace by trace in turn, and prints undefined_names,
syntax_valid, exact_line, identifier_match and completion latency (p50, mean), then
the targets. The mask cost per step is measured by benchmarks/monitor_cost.py.
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

MODES = ("off", "on")


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
        for mode in MODES:
            options = base.merged({"completion": {"monitor": mode}})
            results[mode].append(Replayer(options, runtime, checker).replay(trace))
        print(f"  [{i + 1}/{len(traces)}] {trace.name}", file=sys.stderr)
    s = {m: summarise(results[m]) for m in MODES}
    print(f"\nmodel {runtime.path.name}, {runtime.device}")
    print("monitor  undefined  syntax_valid  exact_line  ident_match (n)   lat p50  lat mean")
    for m in MODES:
        r = s[m]
        print(f"{m:8} {100 * r['undefined_names']:>9.1f} {100 * r['syntax_valid']:>13.1f} "
              f"{100 * r['exact_line']:>11.1f} {100 * (r['identifier_match'] or 0):>11.1f} "
              f"({r['identifier_triggers']}) {r['latency_ms']['p50']:>8.1f} "
              f"{r['latency_ms']['mean']:>9.1f}")
    off, on = s["off"], s["on"]
    ratio = on["undefined_names"] / off["undefined_names"] if off["undefined_names"] else 0.0
    print(f"\nundefined_names on / off        {ratio:.2f}  (target <= 0.5)")
    print(f"syntax_valid with the monitor   {on['syntax_valid']:.3f}  (target >= 0.98)")
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
