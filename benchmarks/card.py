"""The model card's next-line figures: exact match of the first draft on the held-out sets
(``inkling evaluate --held-out SET --fim-order spm``), default decoding and greedy.

    python benchmarks/card.py [--model PATH] [--sets reporting] [--lines 40] [--quick] [--json OUT]

Each set's modules, ``--lines`` lines a module (seed 0), through one Engine configured with
the defaults and then with ``completion.decoder greedy``; prints and writes each set's
lines, exact, exact_any and latency p50 under each. ``--quick``: 1 line a module.
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import load, options, parser, write_json  # noqa: E402

from inkling.evaluation.held_out import evaluate_next_line  # noqa: E402

KEYS = ("lines", "exact", "exact_match", "exact_any", "latency_ms_p50")
DECODINGS = {"default": {}, "greedy": {"completion": {"decoder": "greedy"}}}


def measure(engine, model: str, sets: list[str], lines: int) -> dict:
    """{held-out set: its lines, exact, exact_any and latency p50} on ``engine``."""
    row = {}
    for held in sets:
        r = evaluate_next_line(model, "spm", lines_per_file=lines, engine=engine,
                               held_out=held).summary()
        row[held] = {key: r[key] for key in KEYS}
    return row


def main() -> int:
    ap = parser(__doc__)
    ap.add_argument("--sets", default="reporting", help="held-out sets, comma-separated")
    ap.add_argument("--lines", type=int, default=40, help="lines a module")
    args = ap.parse_args()
    sets, lines = args.sets.split(","), 1 if args.quick else args.lines
    figures = {}
    for name, changes in DECODINGS.items():
        engine, _ = load(options(args, **changes))
        figures[name] = measure(engine, args.model, sets, lines)
        for held, r in figures[name].items():
            print(f"{name:8} {held:10} exact {r['exact']}/{r['lines']} ({r['exact_match']:.1%}), "
                  f"any {r['exact_any']}, latency p50 {r['latency_ms_p50']} ms")
    write_json(args.json, figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
