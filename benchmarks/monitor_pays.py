"""Where the monitor loses: one set's traces replayed with the monitor off, on, and each of
its two parts alone, completions paired, and every completion that the monitor on made
worse than off sorted by its cause.

    python benchmarks/monitor_pays.py --set tuning [--modes off,on] [--losses OUT] [--json OUT]

Modes: ``off``; ``on`` (the masks while decoding and the syntax guard on the shown draft);
``masks`` (the masks alone: the guard left out); ``guard`` (the guard alone: decoding
unmasked). A completion loses when its first draft's edit similarity is lower on than off
(exact_line lost included). Its cause:

- ``guard emptied`` / ``guard cut``: the guard alone loses it too, the masks alone do not;
- ``mask``: the masks alone lose it, the guard alone does not (a mask forbade the
  expected token, or pushed the model elsewhere);
- ``both``: each part alone loses it; ``together``: neither alone does.

``python benchmarks/suite.py --only monitor_pays`` runs it into the store
(``benchmarks/store/monitor_pays.jsonl``, with commit, date, weights, machine and load).
"""
from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import parser, quick_traces, set_traces, write_json  # noqa: E402

from inkling.completion import open_analysis  # noqa: E402
from inkling.completion.engine import Engine  # noqa: E402
from inkling.completion.options import InklingOptions  # noqa: E402
from inkling.evaluation import metrics as m  # noqa: E402
from inkling.evaluation.replay import Replayer  # noqa: E402
from inkling.evaluation.replay_result import summarise  # noqa: E402
from inkling.evaluation.syntax_check import SyntaxChecker  # noqa: E402

MODES = ("off", "on", "masks", "guard")
FIGURES = ("shown", "guard_cut", "guard_emptied", "syntax_valid", "undefined_names",
           "exact_line", "edit_similarity")
_AT_CURSOR = open_analysis.OpenAnalysis.at_cursor


def _part(keep: str):
    """OpenAnalysis.at_cursor keeping one part: "masks" (no guard) or "guard" (no masks)."""
    def at_cursor(self, doc, offset, runtime):
        monitor, guard = _AT_CURSOR(self, doc, offset, runtime)
        return (monitor, None) if keep == "masks" else (None, guard)
    return at_cursor


def replay(replayer: Replayer, trace, mode: str):
    open_analysis.OpenAnalysis.at_cursor = _part(mode) if mode in ("masks", "guard") \
        else _AT_CURSOR
    try:
        return replayer.replay(trace)
    finally:
        open_analysis.OpenAnalysis.at_cursor = _AT_CURSOR


def similarity(rec) -> float:
    return m.edit_similarity(rec.first, rec.expected)


def cause(recs: dict) -> str:
    """Why ``recs["on"]`` is worse than ``recs["off"]`` (see the module's docstring)."""
    masks = similarity(recs["masks"]) < similarity(recs["off"])
    guard = similarity(recs["guard"]) < similarity(recs["off"])
    if guard and not masks:
        return "guard emptied" if recs["guard"].guard_emptied else "guard cut"
    return "mask" if masks and not guard else "both" if masks else "together"


def losses(runs: dict) -> list[dict]:
    """The completions whose first draft is worse on than off, with their cause where
    both parts were replayed alone (and the drafts each mode showed). ``runs``: mode ->
    the TraceResults of the traces in order."""
    out, modes = [], list(runs)
    for traces in zip(*runs.values()):
        for recs in zip(*(t.completions for t in traces)):
            by = dict(zip(modes, recs))
            if similarity(by["on"]) < similarity(by["off"]):
                out.append({"trace": traces[0].name, "line": by["on"].line,
                            "cause": cause(by) if len(by) == len(MODES) else "-",
                            "expected": m.first_line(by["on"].expected),
                            **{mode: m.first_line(r.first) for mode, r in by.items()},
                            "cut": by["on"].guard_cut})
    return out


def syntax_changes(runs: dict) -> tuple[list[dict], int]:
    """The completions whose shown first draft is a syntax error with the monitor on but not
    off (with each part's verdict where both were replayed alone), and how many went the
    other way (an error off, none on)."""
    out, better, modes = [], 0, list(runs)
    for traces in zip(*runs.values()):
        for recs in zip(*(t.completions for t in traces)):
            by = dict(zip(modes, recs))
            on, off = by["on"].valid, by["off"].valid
            better += on is True and off is False
            if on is False and off is True:
                out.append({"trace": traces[0].name, "line": by["on"].line, "syntax": True,
                            "parts": {mode: by[mode].valid for mode in ("masks", "guard")
                                      if mode in by},
                            "expected": m.first_line(by["on"].expected),
                            **{mode: m.first_line(r.first) for mode, r in by.items()},
                            "cut": by["on"].guard_cut})
    return out, better


def wins(runs: dict) -> int:
    return sum(similarity(on) > similarity(off)
               for t_on, t_off in zip(runs["on"], runs["off"])
               for on, off in zip(t_on.completions, t_off.completions))


def figures(s: dict) -> str:
    return (f"shown {s['shown']}  guard_cut {s['guard_cut']}  guard_emptied {s['guard_emptied']}"
            f"  syntax_valid {s['syntax_valid']} (n {s['syntax_valid_n']})  undefined_names "
            f"{s['undefined_names']} (n {s['undefined_names_n']})  exact_line {s['exact_line']}"
            f"  edit_similarity {s['edit_similarity']}  completions {s['completions']}")


def main() -> int:
    ap = parser(__doc__)
    ap.add_argument("--set", choices=("tuning", "reporting"), default="tuning")
    ap.add_argument("--modes", default=",".join(MODES),
                    help=f"modes replayed, of {','.join(MODES)} (off and on required)")
    ap.add_argument("--losses", help="write each losing completion here (JSON Lines)")
    args = ap.parse_args()
    modes = args.modes.split(",")
    if not {"off", "on"} <= set(modes) <= set(MODES):
        ap.error(f"--modes {args.modes}: off and on, and any of {', '.join(MODES)}")
    traces = quick_traces() if args.quick else set_traces(args.set)
    base = InklingOptions().merged({"model": {"path": args.model}})
    runtime = Engine(base).load_model()
    replayer = Replayer(base, runtime, SyntaxChecker())
    runs = {mode: [] for mode in modes}
    for i, trace in enumerate(traces):
        for mode in modes:
            replayer.options = base.merged({"completion": {"monitor": "off" if mode == "off"
                                                           else "on"}})
            runs[mode].append(replay(replayer, trace, mode))
        print(f"  [{i + 1}/{len(traces)}] {trace.name}", file=sys.stderr)
    found = losses(runs)
    summary = {mode: summarise(runs[mode]) for mode in modes}
    lines = [f"{mode:6} {figures(summary[mode])}" for mode in modes]
    lines.append(f"on worse than off: {len(found)}, better: {wins(runs)}; causes "
                 + ", ".join(f"{k} {v}" for k, v in Counter(f["cause"] for f in found)
                             .most_common()))
    errors, fixed = syntax_changes(runs)
    lines.append(f"syntax errors the monitor made: {len(errors)} (the masks alone: "
                 f"{sum(e['parts'].get('masks') is False for e in errors)}, the guard alone: "
                 f"{sum(e['parts'].get('guard') is False for e in errors)}); mended: {fixed}")
    print("\n".join(lines))
    write_json(args.json, {"on_worse_than_off": len(found), "on_better_than_off": wins(runs),
                           "syntax_errors_made": len(errors), "syntax_errors_mended": fixed,
                           **{mode: {k: summary[mode][k] for k in (
                               "shown", "syntax_valid", "undefined_names", "exact_line")}
                              for mode in modes}})
    if args.losses:
        Path(args.losses).write_text("".join(json.dumps(f) + "\n" for f in found + errors))
    return 0


if __name__ == "__main__":
    sys.exit(main())
