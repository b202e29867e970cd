"""Rereading the beam's drafts on the model card's held-out lines.

    python benchmarks/rereading.py [--model PATH] [--runs "4:0,4:1,4:2,4:4,8:2"]
        [--window 768] [--drafts 1,3] [--held-out both] [--json FILE]

Runs the card's next-line evaluation (`inkling evaluate --fim-order spm`: 40 sampled lines
a held-out standard-library file, and of toolz 1.0.0, each completed at its indentation as
an invoked completion) with greedy decoding, then with the beam decoder at each
``width:reread_lines`` of ``--runs`` (0 lines: not reread), for each number of drafts, on
one loaded model, and prints the first draft's exact match, any draft's, latency p50 and
its ratio to greedy's and to the beam's of the same width without rereading
(completion/decoding/rereading.py).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from inkling.completion.engine import Engine
from inkling.completion.options import InklingOptions

sys.path.insert(0, str(Path(__file__).resolve().parent))

from card_lines import measure  # noqa: E402


def _runs(text: str) -> list[tuple[int, int]]:
    out = []
    for part in text.split(","):
        width, _, lines = part.partition(":")
        out.append((int(width), int(lines or 0)))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="")
    ap.add_argument("--runs", default="4:0,4:1,4:2,4:4,8:0,8:2",
                    help="width:reread_lines pairs, comma-separated")
    ap.add_argument("--window", type=int, default=InklingOptions().completion.reread_window)
    ap.add_argument("--drafts", default="1")
    ap.add_argument("--held-out", default="both", choices=("both", "stdlib", "package"))
    ap.add_argument("--json", help="write every row here")
    args = ap.parse_args()
    sets = ["stdlib", "package"] if args.held_out == "both" else [args.held_out]
    runs = [("greedy", 1, 0, 1)] + [("beam", w, n, int(k)) for k in args.drafts.split(",")
                                    for w, n in _runs(args.runs) if w >= int(k)]
    engine = Engine(InklingOptions().merged({"model": {"path": args.model}}))
    runtime = engine.load_model()
    rows = []
    for decoder, width, lines, k in runs:
        engine.configure({"completion": {"decoder": decoder, "beam_width": width,
                                         "reread_lines": lines,
                                         "reread_window": args.window}})
        row = {"decoder": decoder, "width": width, "reread_lines": lines, "drafts": k,
               "window": args.window}
        row.update(measure(engine, args.model, sets, k,
                           f"{decoder} width {width} reread {lines} drafts {k}"))
        rows.append(row)
    counts = ", ".join(f"{h} {rows[0][h]['lines']}" for h in sets)
    print(f"\nmodel {runtime.path.name}, {runtime.device}; spm prompts, lines: {counts}; "
          f"reread window {args.window} tokens")
    print("decoder  width  reread  drafts  " + "  ".join(
        f"{h + ' first':>14} {h + ' any':>12} {'p50':>6} {'xgreedy':>7} {'xbeam':>5}"
        for h in sets))
    for row in rows:
        same = next((r for r in rows if r["decoder"] == row["decoder"] and r["width"] ==
                     row["width"] and r["drafts"] == row["drafts"] and
                     not r["reread_lines"]), None)
        cells = []
        for h in sets:
            c, g = row[h], rows[0][h]
            plain = f"{c['latency_ms_p50'] / same[h]['latency_ms_p50']:>5.2f}" if same else \
                f"{'-':>5}"
            cells.append(f"{100 * c['exact'] / c['lines']:>13.1f}% "
                         f"{100 * c['exact_any'] / c['lines']:>11.1f}% "
                         f"{c['latency_ms_p50']:>6.1f} "
                         f"{c['latency_ms_p50'] / g['latency_ms_p50']:>7.2f} {plain}")
        print(f"{row['decoder']:7} {row['width']:>6} {row['reread_lines']:>7} "
              f"{row['drafts']:>7}  " + "  ".join(cells))
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
