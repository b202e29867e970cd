"""What the protocol adds: traces replayed in-process and through `inkling serve` over
stdio (`inkling replay --via-lsp`, as an editor talks to the server), side by side.

    python benchmarks/lsp_overhead.py [--model PATH] [TRACE ...]

The traces default to the bundled ones (benchmarks/traces/*.jsonl). Prints the latency
p50/p95 of the in-process replay (the Engine's own), and of the replay through the
protocol: the client's round trip (the headline figure, what the user waits for) with
the server Engine's own latency of the same requests beside it, and per request the
difference (the protocol's cost: JSON-RPC, the event loop, the hand-over to the model
thread); and how many completions got the same drafts both ways (each trace is replayed
on a new Engine in process, and in its own workspace folder of the one server through
the protocol, so they should all be the same).
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import SET_TRACES, describe, options, parser, quick_traces, write_json  # noqa: E402

from inkling.completion.engine import Engine  # noqa: E402
from inkling.evaluation.replay import LspReplayer, Replayer  # noqa: E402
from inkling.evaluation.replay_result import summarise  # noqa: E402
from inkling.evaluation.syntax_check import SyntaxChecker  # noqa: E402
from inkling.evaluation.trace_file import read_trace  # noqa: E402


def _ms(d: dict) -> str:
    return f"p50 {d['p50']:.1f} ms, p95 {d['p95']:.1f} ms"


def main() -> int:
    ap = parser(__doc__)
    ap.add_argument("traces", nargs="*", type=Path,
                    help="trace files (default: benchmarks/traces/*.jsonl)")
    args = ap.parse_args()
    traces = quick_traces() if args.quick else [
        read_trace(p) for p in (args.traces or sorted(SET_TRACES.glob("*.jsonl")))]
    if not traces:
        print(f"no traces: {SET_TRACES} holds no *.jsonl")
        return 1
    opts = options(args)
    print(f"replaying {describe(traces)} in-process and via LSP")
    runtime = Engine(opts).load_model()
    checker = SyntaxChecker()
    local = [Replayer(opts, runtime, checker).replay(t) for t in traces]
    lsp = LspReplayer(opts, checker)
    try:
        remote = [lsp.replay(t) for t in traces]
    finally:
        lsp.close()
    a, b = summarise(local), summarise(remote)
    print(f"in-process:               latency {_ms(a['latency_ms'])}")
    print(f"via LSP, client's round trip: latency {_ms(b['latency_ms'])}"
          f"  (sync_ok {b['sync_ok']}, {b['checks']} checks)")
    print(f"via LSP, the server Engine's: latency {_ms(b['engine_latency_ms'])}")
    overhead = b["protocol_overhead_ms"]
    print(f"p50 difference via LSP - in-process {b['latency_ms']['p50'] - a['latency_ms']['p50']:+.1f}"
          f" ms; per-request protocol overhead p50 {overhead['p50']:.2f} ms, "
          f"p95 {overhead['p95']:.2f} ms (target p50 <= 5 ms)")
    text, same = _same_drafts(traces, local, remote)
    print(text)
    write_json(args.json, {"in_process_latency_ms_p50": a["latency_ms"]["p50"],
                           "lsp_latency_ms_p50": b["latency_ms"]["p50"],
                           "protocol_overhead_ms_p50": overhead["p50"],
                           "protocol_overhead_ms_p95": overhead["p95"],
                           "sync_ok": b["sync_ok"], "same_drafts": same})
    return 0


def _same_drafts(traces, local, remote) -> tuple[str, float]:
    """How many completions got the same drafts in process and through the protocol, and
    the first few that did not (trace:line); and the share that did."""
    pairs = [(t.source, x, y) for t, here, there in zip(traces, local, remote)
             for x, y in zip(here.completions, there.completions)]
    counts = [(len(h.completions), len(t.completions)) for h, t in zip(local, remote)]
    differ = [f"{Path(src).name}:{x.line}" for src, x, y in pairs if x.drafts != y.drafts]
    return (f"the same drafts in process and via LSP: {len(pairs) - len(differ)} of "
            f"{len(pairs)} completions" + (f"; differ: {', '.join(differ[:8])}" if differ else "")
            + ("" if all(a == b for a, b in counts) else f"; completions per trace {counts}"),
            (len(pairs) - len(differ)) / max(1, len(pairs)))


if __name__ == "__main__":
    sys.exit(main())
