"""What the protocol adds: the sample traces replayed in-process and through
`inkling serve` over stdio (`inkling replay --via-lsp`), side by side.

    python benchmarks/lsp_overhead.py [--model PATH]

Prints completion latency p50/p95 both ways and, per request, the client's wall time
minus the Engine's own latency for the same request (the protocol's cost: JSON-RPC,
the event loop, the hand-over to the model thread).
"""
from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_traces import describe, sample_traces  # noqa: E402

from inkling.completion.engine import Engine  # noqa: E402
from inkling.completion.options import InklingOptions  # noqa: E402
from inkling.lsp.replay import LspReplayer, Replayer  # noqa: E402
from inkling.lsp.replay_result import summarise  # noqa: E402
from inkling.lsp.syntax_check import SyntaxChecker  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="")
    args = ap.parse_args()
    traces = sample_traces()
    if not traces:
        print("the sample traces (../shared/traces) are needed")
        return 1
    options = InklingOptions().merged({"model": {"path": args.model}})
    print(f"replaying {describe(traces)} in-process and via LSP")
    runtime = Engine(options).load_model()
    checker = SyntaxChecker()
    local = [Replayer(options, runtime, checker).replay(t) for t in traces]
    lsp = LspReplayer(options, checker)
    try:
        remote = [lsp.replay(t) for t in traces]
        overhead = lsp.engine.overhead_ms
    finally:
        lsp.close()
    a, b = summarise(local), summarise(remote)
    print(f"in-process: latency p50 {a['latency_ms']['p50']:.1f} ms, p95 {a['latency_ms']['p95']:.1f} ms")
    print(f"via LSP:    latency p50 {b['latency_ms']['p50']:.1f} ms, p95 {b['latency_ms']['p95']:.1f} ms"
          f"  (sync_ok {b['sync_ok']}, {b['checks']} checks)")
    print(f"p50 difference {b['latency_ms']['p50'] - a['latency_ms']['p50']:+.1f} ms; "
          f"per-request protocol overhead p50 {statistics.median(overhead):.2f} ms, "
          f"p95 {statistics.quantiles(overhead, n=20)[-1]:.2f} ms (target p50 <= 5 ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
