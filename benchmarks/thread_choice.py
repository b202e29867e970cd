"""The native forward's thread count: the runtime's measured choice (runtime/thread_choice.py)
against one thread and two threads fixed, replaying the same traces interleaved (trace
by trace, the three in a rotating order), quiet or beside busy processes.

    python benchmarks/thread_choice.py [--busy N] [--model PATH]

``--busy N`` starts N processes of the same priority that spin for the whole run (what
a compile or a browser does to an editor's machine); the default, 0, leaves the machine
as it is (run it with the training paused). Traces: retype traces of toolz 1.0.0 (held
out of the bundled model's training) and the bundled retype traces (benchmarks/traces).
"""
from __future__ import annotations

import contextlib
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import options, parser, quick_traces, toolz_traces, write_json  # noqa: E402

from inkling.completion.engine import Engine  # noqa: E402
from inkling.evaluation.replay import Replayer  # noqa: E402
from inkling.evaluation.syntax_check import SyntaxChecker  # noqa: E402
from inkling.evaluation.trace_file import read_trace  # noqa: E402

BUNDLED = Path(__file__).resolve().parent / "traces"
SPIN = "while True: pass"


def main() -> int:
    ap = parser(__doc__)
    ap.add_argument("--busy", type=int, default=0, help="busy processes beside (default 0)")
    args = ap.parse_args()
    opts = options(args)
    runtime = Engine(opts).load_model()
    choice = runtime.threads
    if choice is None or not choice.adaptive:
        print("no choice to measure: the forward's threads are fixed here "
              f"({choice and choice.report()})")
        write_json(args.json, {"adaptive": False})
        return 0
    traces = quick_traces() if args.quick else bundled_and_toolz()
    pins = [None, 1, choice.counts[-1]]
    most = choice.counts[-1]
    names = {None: "measured (defaults)", 1: "1 thread", most: f"{most} threads"}
    replayers = {p: Replayer(opts, runtime, SyntaxChecker()) for p in pins}
    records: dict = {p: [] for p in pins}
    spinners = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(args.busy)]
    try:
        for k, trace in enumerate(traces):
            for p in pins[k % 3:] + pins[:k % 3]:
                with choice.pinned(p) if p is not None else contextlib.nullcontext():
                    records[p] += replayers[p].replay(trace).completions
    finally:
        for s in spinners:
            s.kill()
    n = len(records[None])
    print(f"model {runtime.path.name}; {len(traces)} traces, {n} completions each way, "
          f"{args.busy} busy process(es) beside")
    print(f"{'threads':22s} {'lat p50':>8s} {'lat mean':>9s} {'lat p95':>8s} {'first p50':>10s}")
    p50 = {}
    for p in pins:
        lat = [r.latency_ms for r in records[p]]
        p50[p] = statistics.median(lat)
        print(f"{names[p]:22s} {p50[p]:8.2f} {statistics.mean(lat):9.2f} "
              f"{statistics.quantiles(lat, n=20)[-1]:8.1f} "
              f"{statistics.median(r.first_token_ms for r in records[p]):10.2f}")
    best = min(p50[p] for p in pins[1:])
    print(f"measured p50 / the better fixed count's: {p50[None] / best:.3f}")
    print(f"at the end: {choice.report()}")
    write_json(args.json, {"adaptive": True, "measured_over_best_fixed_p50": p50[None] / best,
                           **{f"p50_ms.{names[p].split(' ')[0]}": p50[p] for p in pins}})
    return 0


def bundled_and_toolz() -> list:
    """Retype traces of toolz (when its wheel can be had) and the bundled retype traces."""
    with tempfile.TemporaryDirectory() as tmp:
        traces, why = toolz_traces(Path(tmp))
    if why:
        print(f"(no toolz traces: {why})")
    return traces + [read_trace(str(p)) for p in sorted(BUNDLED.glob("*.jsonl"))]


if __name__ == "__main__":
    sys.exit(main())
