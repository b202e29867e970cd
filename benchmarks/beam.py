"""Beam search's width and length penalty on the model card's held-out lines.

    python benchmarks/beam.py [--model PATH] [--widths 1,2,4,8] [--penalties 0,0.5,1]
        [--drafts 1,3] [--held-out both] [--json FILE]

Runs the card's next-line evaluation (`inkling evaluate --fim-order spm`: 40 sampled lines
a held-out standard-library file, and of toolz 1.0.0, each completed at its indentation as
an invoked completion) with greedy decoding, then with the beam decoder at each width (at
the default length penalty) and each length penalty (at the default width), for each
number of drafts, on one loaded model, and prints the first draft's exact match, any
draft's, and latency p50 and its ratio to greedy's. The length penalty is the exponent
of the length a draft's log-probability is divided by (completion/decoding/beam.py).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from inkling.completion.decoding import beam
from inkling.completion.engine import Engine
from inkling.completion.options import InklingOptions

sys.path.insert(0, str(Path(__file__).resolve().parent))

from card_lines import measure  # noqa: E402


def _numbers(text: str, kind=float) -> list:
    return [kind(x) for x in text.split(",") if x.strip()]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="")
    ap.add_argument("--widths", default="1,2,4,8")
    ap.add_argument("--penalties", default="0,0.5,1")
    ap.add_argument("--drafts", default="1,3")
    ap.add_argument("--held-out", default="both", choices=("both", "stdlib", "package"))
    ap.add_argument("--json", help="write every row here")
    args = ap.parse_args()
    sets = ["stdlib", "package"] if args.held_out == "both" else [args.held_out]
    default_width, default_penalty = InklingOptions().completion.beam_width, beam.LENGTH_PENALTY
    runs = [("greedy", 1, default_penalty, 1)]
    for k in _numbers(args.drafts, int):
        runs += [("beam", w, default_penalty, k) for w in _numbers(args.widths, int) if w >= k]
        runs += [("beam", default_width, p, k) for p in _numbers(args.penalties)
                 if p != default_penalty]
    engine = Engine(InklingOptions().merged({"model": {"path": args.model}}))
    runtime = engine.load_model()
    rows = []
    for decoder, width, penalty, k in runs:
        beam.LENGTH_PENALTY = penalty
        engine.configure({"completion": {"decoder": decoder, "beam_width": width}})
        row = {"decoder": decoder, "width": width, "penalty": penalty, "drafts": k}
        row.update(measure(engine, args.model, sets, k,
                           f"{decoder} width {width} penalty {penalty} drafts {k}"))
        rows.append(row)
    beam.LENGTH_PENALTY = default_penalty
    counts = ", ".join(f"{h} {rows[0][h]['lines']}" for h in sets)
    print(f"\nmodel {runtime.path.name}, {runtime.device}; spm prompts, lines: {counts}")
    print("decoder  width  penalty  drafts  " + "  ".join(
        f"{h + ' first':>14} {h + ' any':>12} {'p50':>6} {'x':>5}" for h in sets))
    for row in rows:
        cells = []
        for h in sets:
            c, g = row[h], rows[0][h]
            ratio = c["latency_ms_p50"] / g["latency_ms_p50"]
            cells.append(f"{100 * c['exact'] / c['lines']:>13.1f}% "
                         f"{100 * c['exact_any'] / c['lines']:>11.1f}% "
                         f"{c['latency_ms_p50']:>6.1f} {ratio:>5.2f}")
        print(f"{row['decoder']:7} {row['width']:>6} {row['penalty']:>8} {row['drafts']:>7}  "
              + "  ".join(cells))
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
