"""Blank lines filled: what ``completion.fill_blank_lines`` does to the model card's lines.

    python benchmarks/blank_lines.py [--model PATH] [--held-out both|stdlib|package]
        [--drafts 1] [--json FILE]

The model card's next-line evaluation (``inkling evaluate``: each sampled line of a held-out
file is emptied to its indentation and completed there, at a blank line) with the rule on
(the default) and off, side by side on one Engine per setting, and prints for each:

- exact: completions whose first line is the removed line (the card's figure);
- empty: completions that suggest nothing (an empty first line), which an editor does not
  show at all;
- the lines the two settings decide differently (right with one and wrong with the other);
- latency p50 and its ratio to the rule off.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys

from inkling.completion.engine import Engine
from inkling.evaluation.held_out import evaluate_next_line, evaluation_options


def run(model: str, held_out: str, fill: bool, drafts: int):
    options = evaluation_options(model, "spm").merged(
        {"completion": {"fill_blank_lines": fill}})
    return evaluate_next_line(model, "spm", engine=Engine(options), held_out=held_out,
                              drafts=drafts)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="")
    ap.add_argument("--held-out", default="both", choices=("both", "stdlib", "package"))
    ap.add_argument("--drafts", type=int, default=1)
    ap.add_argument("--json", default="")
    a = ap.parse_args()
    rows = []
    print("| held out | fill_blank_lines | lines | exact | empty | only this right | "
          "p50 (ms) | p50 / off |")
    print("|---|---|---|---|---|---|---|---|")
    for held in (("stdlib", "package") if a.held_out == "both" else (a.held_out,)):
        off = run(a.model, held, False, a.drafts)
        on = run(a.model, held, True, a.drafts)
        right = {name: {i for i, ok in enumerate(r.right) if ok}
                 for name, r in (("off", off), ("on", on))}
        base = statistics.median(off.latencies_ms)
        for name, r in (("on", on), ("off", off)):
            other = "off" if name == "on" else "on"
            only = len(right[name] - right[other])
            empty = sum(1 for g in r.suggestions if not g.strip())
            p50 = statistics.median(r.latencies_ms)
            rows.append({"held_out": held, "fill_blank_lines": name == "on", "lines": r.lines,
                         "exact": r.exact, "empty": empty, "only_this_right": only,
                         "latency_ms_p50": round(p50, 1)})
            print(f"| {held} | {name} | {r.lines} | {r.exact} ({100 * r.exact_match:.1f}%) | "
                  f"{empty} | {only} | {p50:.1f} | {p50 / base:.2f} |", flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
