"""The soak and load test: the real `inkling serve` driven for a bounded time by seeded editors
that type, edit far from the cursor, complete, cancel, open and close documents and check the
server's copy of each, over stdio (one editor) and over TCP (two editors at once, each replaced
by a new one midway, one of them dropping its socket with requests in flight): the driver is
evaluation/soak.py, and tests/lsp/test_soak.py runs its short form.

    python benchmarks/soak.py [--model PATH] [--minutes 20] [--seed 1] [--transports stdio,tcp]
                              [--quick] [--json OUT]

``--minutes`` is the whole run, shared evenly by the transports, one after the other;
``--quick`` soaks each for a few seconds. Prints per transport the requests and how they were
answered (unanswered, answered twice, misrouted: answered on another connection or about
another document; unexpected errors), desyncs among the checks, tracebacks on the server's
stderr, the server's resident memory first and at most, and the inline completions' round trip
p50 / p95 / p99 (the client's clock: what the editor waits for, debounce included). Exits 1
when a transport shows anything wrong."""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import parser, write_json  # noqa: E402

from inkling.evaluation.soak import TRANSPORTS, healthy, soak, summary  # noqa: E402
from inkling.models import BUNDLED_MODEL_DIR  # noqa: E402

QUICK_SECONDS = 12      # per transport under --quick


def main() -> int:
    ap = parser(__doc__)
    ap.add_argument("--minutes", type=float, default=20, help="the whole run (default 20)")
    ap.add_argument("--seed", type=int, default=1, help="the editors' seed (default 1)")
    ap.add_argument("--transports", default=",".join(TRANSPORTS),
                    help="comma-separated, of stdio and tcp (default both)")
    args = ap.parse_args()
    transports = [t for t in args.transports.split(",") if t]
    unknown = set(transports) - set(TRANSPORTS)
    if unknown or not transports:
        ap.error(f"--transports: expected some of {', '.join(TRANSPORTS)}, "
                 f"got {args.transports!r}")
    seconds = QUICK_SECONDS if args.quick else args.minutes * 60 / len(transports)
    model = args.model or str(BUNDLED_MODEL_DIR)
    print(f"soaking {', '.join(transports)} for {seconds:.0f} s each, seed {args.seed}, "
          f"model {model}", flush=True)
    figures = soak(model, seconds, args.seed, tuple(transports))
    for name, fig in figures.items():
        print(summary(name, fig))
        for line in fig["problems"]:
            print(f"  problem: {line}")
        if fig["tracebacks"]:
            print(f"  server stderr, last lines:\n{fig['stderr_tail']}")
    write_json(args.json, {**figures, "seconds_per_transport": seconds})
    return 0 if all(healthy(f) for f in figures.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
