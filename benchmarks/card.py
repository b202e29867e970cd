"""The model card's held-out lines as a benchmark measures them: one evaluation
(`inkling evaluate --fim-order spm`) of each held-out set on a configured Engine."""
from __future__ import annotations

import sys

from inkling.evaluation.held_out import evaluate_next_line

KEYS = ("lines", "exact", "exact_any", "latency_ms_p50")


def measure(engine, model: str, sets: list[str], drafts: int, label: str) -> dict:
    """{held-out set: its lines, exact, exact_any and latency p50} with ``drafts`` drafts
    asked, on ``engine`` as configured; ``label`` and the counts go to stderr."""
    row = {}
    for held in sets:
        r = evaluate_next_line(model, "spm", engine=engine, held_out=held,
                               drafts=drafts).summary()
        row[held] = {key: r[key] for key in KEYS}
    print(f"  {label}: " + ", ".join(f"{h} {row[h]['exact']}/{row[h]['exact_any']}"
                                     for h in sets), file=sys.stderr)
    return row
