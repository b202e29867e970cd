"""Alternative drafts: does a length floor, sampling or pruning make them distinct and useful?

    python benchmarks/alternatives.py [--model PATH] [--decoder superposed|branches|beam]
        [--drafts 3]
        [--variants base,floor=16,temperature=0.7,prune=1.5,...] [--json FILE]

Replays retype traces of the held-out standard-library files and of toolz 1.0.0's modules
(a package the bundled model never trained on) with k drafts at every completion, once per
variant of the alternatives' options, event by event (``replay_together``), and prints
for each:

- exact_line (the first draft's first line is the expected one) and exact_line_any (one of
  the shown drafts'): the points between them are what the alternatives add;
- alt_exact: completions where an alternative, not the first draft, is the right line;
- shown: drafts shown a completion; fragments: the share of shown alternatives that are a
  bare word or shorter than 4 characters (`if`, `self`, `x =`) on a line that is not that;
- closest: the mean, over completions, of the best edit similarity among the shown drafts;
- latency p50 / p95 and their ratio to the first variant.

A variant is `base` (the options as they are: the defaults, a floor of 16 tokens) or
`key=value[+key=value]` over the options as they are, with `key` one of
`floor` (completion.alternative_min_tokens; `floor=0` is the rule before it: the lead's
extent alone), `temperature` (alternative_temperature), `prune` (alternative_prune),
`decoder` (another decoder than `--decoder`'s), `width` (beam_width) and `reread`
(reread_lines): e.g. `--decoder superposed --variants base,decoder=beam,decoder=beam+reread=0`.
Sampled drafts are seeded by their prompt, so a rerun gives the same drafts.
"""
from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_traces import describe, held_out_traces, toolz_traces  # noqa: E402

from inkling.completion.engine import Engine  # noqa: E402
from inkling.completion.options import InklingOptions  # noqa: E402
from inkling.evaluation import metrics as m  # noqa: E402
from inkling.evaluation.replay import Replayer, replay_together  # noqa: E402
from inkling.evaluation.replay_result import summarise  # noqa: E402
from inkling.evaluation.syntax_check import SyntaxChecker  # noqa: E402

KEYS = {"floor": ("alternative_min_tokens", int), "temperature": ("alternative_temperature", float),
        "prune": ("alternative_prune", float), "decoder": ("decoder", str),
        "width": ("beam_width", int), "reread": ("reread_lines", int)}
VARIANTS = ("floor=0,base,floor=8,floor=48,temperature=0.5,temperature=1.0,prune=1.0,prune=2.0,"
            "floor=0+temperature=1.0")
_BARE_WORD = re.compile(r"[A-Za-z_]\w*")


def parse_variant(text: str) -> dict:
    """'floor=16+temperature=0.7' -> the completion options it sets; 'base' -> {}."""
    if text == "base":
        return {}
    out = {}
    for part in text.split("+"):
        key, _, value = part.partition("=")
        if key not in KEYS or not value:
            raise SystemExit(f"alternatives.py: bad variant {text!r}: expected base or "
                             f"KEY=VALUE[+KEY=VALUE] with KEY one of {', '.join(KEYS)}")
        name, kind = KEYS[key]
        out[name] = kind(value)
    return out


def fragment(draft: str, expected: str) -> bool:
    """A bare word or fewer than 4 non-blank characters where the line is something else."""
    line = m.first_line(draft).strip()
    return line != m.first_line(expected).strip() and (
        len(re.sub(r"\s", "", line)) < 4 or bool(_BARE_WORD.fullmatch(line)))


def measure(results) -> dict:
    """The alternatives' figures over a variant's trace results."""
    recs = [c for t in results for c in t.completions]
    s = summarise(results)
    alternatives = [(d, c.expected) for c in recs for d in c.drafts[1:]]
    lat = s["latency_ms"]
    return {
        "completions": len(recs),
        "exact_line": s["exact_line"], "exact_line_any": s["exact_line_any"],
        "alt_exact": statistics.mean(not m.exact_line(c.first, c.expected)
                                     and m.exact_line_any(list(c.drafts[1:]), c.expected)
                                     for c in recs),
        "shown": statistics.mean(len(c.drafts) for c in recs),
        "fragments": (statistics.mean(fragment(d, e) for d, e in alternatives)
                      if alternatives else 0.0),
        "closest": statistics.mean(max((m.edit_similarity(d, c.expected) for d in c.drafts),
                                       default=0.0) for c in recs),
        "p50": lat["p50"], "p95": lat["p95"], "forwards": statistics.mean(c.forwards for c in recs),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="")
    ap.add_argument("--decoder", default="superposed",
                    choices=("branches", "superposed", "beam"))
    ap.add_argument("--drafts", type=int, default=3)
    ap.add_argument("--variants", default=VARIANTS, help="comma-separated; the first is the "
                    "reference of the latency ratios")
    ap.add_argument("--no-toolz", action="store_true", help="the standard-library files only")
    ap.add_argument("--json", help="write every variant's figures here")
    args = ap.parse_args()
    variants = {v: parse_variant(v) for v in args.variants.split(",")}
    traces = held_out_traces(0, 4)
    if not args.no_toolz:
        tz, why = toolz_traces(Path(tempfile.mkdtemp(prefix="inkling-toolz-")))
        if why:
            print(f"(no toolz traces: {why})")
        traces += tz
    base = InklingOptions().merged({"model": {"path": args.model},
                                    "completion": {"drafts": args.drafts,
                                                   "automatic_drafts": args.drafts,
                                                   "decoder": args.decoder}})
    for over in variants.values():
        base.merged({"completion": over}).validate()          # a bad value before loading
    engine = Engine(base)
    runtime = engine.load_model()
    print(f"replaying {describe(traces)} with k = {args.drafts}, {args.decoder}, "
          f"{len(variants)} variants")
    datastore = engine.build_datastore()
    checker = SyntaxChecker()
    results = {v: [] for v in variants}
    for i, trace in enumerate(traces):
        replayers = [Replayer(base.merged({"completion": over}), runtime, checker, datastore)
                     for over in variants.values()]
        for v, result in zip(variants, replay_together(replayers, trace)):
            results[v].append(result)
        print(f"  [{i + 1}/{len(traces)}] {trace.name}", file=sys.stderr)
    figures = {v: measure(r) for v, r in results.items()}
    ref = figures[next(iter(variants))]
    print(f"\nmodel {runtime.path.name}, {runtime.device}, {args.decoder}, k = {args.drafts}, "
          f"{ref['completions']} completions a variant")
    print(f"{'variant':26} exact  any  alt_exact  shown  fragments  closest  "
          f"p50 ms  p95 ms  p50/ref  fwd")
    for v, f in figures.items():
        print(f"{v:26} {100 * f['exact_line']:5.1f} {100 * f['exact_line_any']:4.1f} "
              f"{100 * f['alt_exact']:10.1f} {f['shown']:6.2f} {100 * f['fragments']:9.1f}% "
              f"{f['closest']:8.3f} {f['p50']:7.1f} {f['p95']:7.1f} "
              f"{f['p50'] / ref['p50']:8.2f} {f['forwards']:4.1f}")
    if args.json:
        Path(args.json).write_text(json.dumps({"decoder": args.decoder, "drafts": args.drafts,
                                               "figures": figures}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
