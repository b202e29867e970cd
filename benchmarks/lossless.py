"""Lossless drafting, measured: every completion token for token across drafting modes.

    python benchmarks/lossless.py [--samples] [--held-out] [--toolz] [TRACE ...]
                                  [--modes none,prompt-lookup,suffix] [--cache pie]
                                  [--monitor off] [--no-redecide] [--noise] [--quick] [--json OUT] [--dump OUT]

Replays each trace once per mode through the Engine (as ``inkling replay`` does: the
append path, window moves, edits above the cursor, stale-cache refreshes) and compares
every completion's token ids and suggestion with the first mode's (``none``: greedy
decoding, one row a forward). For each completion that differs it prints the first
differing token and the top-2 logit margin of that decision in both modes; then the
smallest margins met, and how many drafted rows the near-tie rule re-decided in greedy's
own shape (``speculative.NEAR_TIE``; ``--no-redecide`` turns it off, to see what it
changes). ``--noise`` also runs, for every row a drafted forward decided, greedy's
forward for that row over the same cache and reports how far their logits and top-2
margins differ: the float32 noise of another batch shape, which the bound must exceed.

Traces: ``--samples`` (../shared/traces), ``--held-out`` (retype traces of the held-out
standard-library files, 4 functions each, as the other benchmarks make them), ``--toolz``
(toolz 1.0.0, a pure-Python package the bundled model was not trained on: fetched with
``pip download`` into a temporary folder and made into retype traces of its four modules
with ``inkling trace retype``'s defaults; skipped, with the reason, when pip cannot
fetch it), and trace files named on the command line.
"""
from __future__ import annotations

import copy
import functools
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch  # noqa: E402

from common import (describe, held_out_traces, parser, quick_traces, sample_traces,  # noqa: E402
                    toolz_traces, write_json)

from inkling.cache.prompt_cache import PromptCache  # noqa: E402
from inkling.completion import engine as engine_module  # noqa: E402
from inkling.completion.decoding import greedy, speculative  # noqa: E402
from inkling.completion.engine import Engine  # noqa: E402
from inkling.completion.options import InklingOptions  # noqa: E402
from inkling.evaluation.replay import Replayer  # noqa: E402
from inkling.evaluation.syntax_check import SyntaxChecker  # noqa: E402
from inkling.evaluation.trace_file import read_trace  # noqa: E402



def margin(row: torch.Tensor) -> float:
    top = torch.topk(row.float(), 2).values
    return float(top[0] - top[1])


class Recorder:
    """Instruments decoding (by wrapping module functions, for this measurement only):
    each decided token's top-2 margin, the rows the near-tie rule re-decided, and with
    ``noise`` each drafted row against greedy's forward for it over the same cache."""

    def __init__(self, noise: bool):
        self.noise = noise
        self.decisions: list[tuple[int, float]] = []      # this completion's
        self.redecided: list[float] = []                  # margins of re-decided rows
        self.row_noise: list[tuple[str, float, float]] = []   # (kind, max |dlogit|, |dmargin|)
        self._pre = None

    def install(self) -> None:
        rec = self
        pick, path_lps, near = greedy.pick, speculative.Walk.logprobs, speculative.near_tie
        walk, extend_tree, sync = speculative.walk, PromptCache.extend_tree, PromptCache.sync

        def picked(logits):
            rec.decisions.append((int(torch.argmax(logits)), margin(logits)))
            return pick(logits)

        def path_logprobs(w, tree, n):
            rec.decisions += [(tree.tokens[w.path[j]], margin(w.rows[j])) for j in range(n)]
            return path_lps(w, tree, n)

        def near_tie(out, rows, bound):
            at = near(out, rows, bound)
            if at is not None:                  # rows None: every row of out
                rec.redecided.append(margin(out[at if rows is None else rows[at]]))
            return at

        def walked(tree, out, root, states=None):
            w = walk(tree, out, root, states)
            if rec.noise and rec._pre is not None:
                rec._compare(tree, w.rows, w.path)
            rec._pre = None
            return w

        def tree_forward(cache, tokens, parents, keep_last=0):
            if rec.noise and keep_last == 0 and len(tokens) > 1:
                rec._pre = ("tree", _clone(cache), tokens[0], None)
            return extend_tree(cache, tokens, parents, keep_last)

        def synced(cache, ids, edges=(), draft=None):
            rec._pre = None
            if rec.noise and draft is not None and draft[0]:
                ref = _clone(cache)
                rec._pre = ("prefill", ref, None, sync(ref, ids, edges, None).logits)
            res = sync(cache, ids, edges, draft)
            if res.draft_logits is None:
                rec._pre = None
            return res

        greedy.pick = speculative.pick = picked
        speculative.Walk.logprobs = path_logprobs
        speculative.near_tie = near_tie
        speculative.walk = walked
        PromptCache.extend_tree = tree_forward
        PromptCache.sync = synced

    def _compare(self, tree, logits, path) -> None:
        """Greedy's forward for each walked row (the root's, then each accepted node's)
        over a copy of the cache the drafted forward ran on. logits: [len(path) + 1,
        vocab], the walked rows."""
        kind, ref, root, ref0 = self._pre
        for i, r in enumerate(range(len(path) + 1)):
            if i == 0:
                row = ref0 if kind == "prefill" else ref.extend([root])[-1]
            else:
                row = ref.extend([tree.tokens[path[i - 1]]])[-1]
            row = row.masked_fill(torch.isinf(logits[r]), float("-inf"))  # the same mask
            seen = torch.isfinite(logits[r])
            self.row_noise.append((kind, float((row - logits[r])[seen].abs().max()),
                                   abs(margin(row) - margin(logits[r]))))


def _clone(cache: PromptCache) -> PromptCache:
    c = PromptCache.__new__(PromptCache)
    c.__dict__.update(cache.__dict__)
    c.ids, c.stale, c.past = list(cache.ids), list(cache.stale), copy.deepcopy(cache.past)
    return c


def replay(options, runtime, checker, datastore, trace, rec: Recorder) -> list[dict]:
    """One trace in one mode: per completion its line, suggestion, token ids and the
    margins of its decided tokens."""
    outs = []
    decode = engine_module.decode_drafts          # wrapped where the engine looks it up

    def decoded(request, decoder):
        rec.decisions = []
        drafts, forwards = decode(request, decoder)
        outs.append(([list(d.token_ids) for d in drafts], rec.decisions))
        return drafts, forwards
    engine_module.decode_drafts = decoded
    meter = engine_module.AcceptanceMeter       # every completion drafts, idle or not
    engine_module.AcceptanceMeter = functools.partial(meter, explore_completions=1)
    try:
        result = Replayer(options, runtime, checker, datastore).replay(trace)
    finally:
        engine_module.decode_drafts, engine_module.AcceptanceMeter = decode, meter
    return [{"line": c.line, "n": n, "drafts": list(c.drafts), "tokens": t,
             "margins": [m for _, m in d]}
            for n, (c, (t, d)) in enumerate(zip(result.completions, outs))]


def first_difference(a: list[int], b: list[int]) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


def main() -> int:
    ap = parser(__doc__)
    ap.add_argument("traces", nargs="*")
    ap.add_argument("--samples", action="store_true")
    ap.add_argument("--held-out", action="store_true")
    ap.add_argument("--toolz", action="store_true")
    ap.add_argument("--modes", default="none,prompt-lookup,suffix")
    ap.add_argument("--cache", default="pie", choices=("full", "pie", "naive"))
    ap.add_argument("--monitor", choices=("off", "on"), help="default: the options' default")
    ap.add_argument("--no-redecide", action="store_true",
                    help="turn the near-tie rule off (bound 0), to measure what it changes")
    ap.add_argument("--noise", action="store_true",
                    help="run greedy's forward for every drafted row and compare (slower)")
    ap.add_argument("--dump", help="write every completion's tokens and margins here")
    args = ap.parse_args()
    traces = sample_traces() if args.samples else []
    traces += held_out_traces(0, 4) if args.held_out else []
    traces += [read_trace(p) for p in args.traces]
    traces = quick_traces() if args.quick else traces      # the quick trace alone
    tmp = tempfile.TemporaryDirectory(prefix="inkling-toolz-")
    if args.toolz and not args.quick:
        found, why = toolz_traces(Path(tmp.name))
        print(f"toolz: {describe(found)}" if found else f"toolz skipped: {why}")
        traces += found
    if not traces:
        ap.error("no traces (name some, or --samples / --held-out / --toolz / --quick)")
    modes = args.modes.split(",")
    if args.no_redecide:
        speculative.NEAR_TIE = {dtype: 0.0 for dtype in speculative.NEAR_TIE}
    monitor = args.monitor or InklingOptions().completion.monitor
    if args.noise and monitor == "on":
        ap.error("--noise compares single rows: run it with --monitor off (forced names are "
                 "fed as chains)")
    print(f"replaying {describe(traces)} with drafting {', '.join(modes)}, cache {args.cache}, "
          f"monitor {monitor}, near-tie rule {'off' if args.no_redecide else 'on'}, "
          f"{torch.get_num_threads()} threads")
    base = InklingOptions().merged({"model": {"path": args.model},
                                    "cache": {"mode": args.cache}})
    if args.monitor:
        base = base.merged({"completion": {"monitor": args.monitor}})
    engine = Engine(base.merged({"completion": {"draft": "suffix"}}))
    runtime = engine.load_model()
    datastore = engine.build_datastore()
    bound = speculative.near_tie_bound(runtime.dtype)
    rec = Recorder(args.noise)
    rec.install()
    checker = SyntaxChecker()
    runs: dict[str, dict[str, list[dict]]] = {}
    counts = {mode: [0, 0] for mode in modes}        # decided tokens, rows re-decided
    t0 = time.perf_counter()
    for i, trace in enumerate(traces):
        for mode in modes:
            before = len(rec.redecided)
            opts = base.merged({"completion": {"draft": mode}})
            got = replay(opts, runtime, checker, datastore, trace, rec)
            runs.setdefault(f"{trace.name} ({i + 1})", {})[mode] = got
            counts[mode][0] += sum(len(c["margins"]) for c in got)
            counts[mode][1] += len(rec.redecided) - before
        print(f"  [{i + 1}/{len(traces)}] {trace.name} ({time.perf_counter() - t0:.0f} s)",
              file=sys.stderr, flush=True)
    write_json(args.json, report(runs, modes, counts, rec, bound))
    if args.dump:
        Path(args.dump).write_text(json.dumps(runs))
    return 0


def report(runs: dict, modes: list[str], counts: dict, rec: Recorder, bound: float) -> dict:
    """Print what differs from the first mode; {mode: completions, how many differ}."""
    ref = modes[0]
    figures = {}
    print(f"\nnear-tie bound {bound:g} (top-2 logit margin)")
    for mode in modes[1:]:
        n, differ = 0, []
        for name, by_mode in runs.items():
            for a, b in zip(by_mode[ref], by_mode[mode]):
                n += 1
                if a["tokens"] == b["tokens"] and a["drafts"] == b["drafts"]:
                    continue
                j = first_difference(a["tokens"][0] if a["tokens"] else [],
                                     b["tokens"][0] if b["tokens"] else [])
                ma = a["margins"][j] if j < len(a["margins"]) else None
                mb = b["margins"][j] if j < len(b["margins"]) else None
                differ.append((name, a["n"], j, ma, mb, a["drafts"][:1], b["drafts"][:1]))
        print(f"{mode} against {ref}: {n} completions, {len(differ)} differ")
        figures[mode] = {"completions": n, "differ": len(differ)}
        for name, n, j, ma, mb, da, db in differ:
            fa = f"{ma:.2e}" if ma is not None else "-"
            fb = f"{mb:.2e}" if mb is not None else "-"
            print(f"  {name} completion {n + 1}: token {j}, margin {ref} {fa} / {mode} {fb}"
                  f"{' (under the bound)' if mb is not None and mb < bound else ''}")
            print(f"    {ref}: {da[0][:60] if da else ''!r}\n    {mode}: {db[0][:60] if db else ''!r}")
    for mode in modes:
        decided, redecided = counts[mode]
        ms = sorted(m for by_mode in runs.values() for c in by_mode[mode] for m in c["margins"])
        under = sum(m < bound for m in ms)
        print(f"{mode}: {decided} decided tokens, {under} with a margin under the bound "
              f"({100 * under / max(1, decided):.3f}%), smallest "
              f"{', '.join(f'{m:.2e}' for m in ms[:4])}; rows re-decided: {redecided}")
    # the same decision in two modes (completions that agree): how far its margin moved
    for mode in modes[1:]:
        moved = [abs(x - y) for by_mode in runs.values()
                 for a, b in zip(by_mode[ref], by_mode[mode]) if a["tokens"] == b["tokens"]
                 for x, y in zip(a["margins"], b["margins"])]
        if moved:
            moved.sort()
            print(f"margin moved between {ref} and {mode} at the same decision: "
                  f"p50 {moved[len(moved) // 2]:.1e}, p99 {moved[int(len(moved) * 0.99)]:.1e}, "
                  f"max {moved[-1]:.1e} ({len(moved)} decisions)")
    if rec.row_noise:
        for kind in ("prefill", "tree"):
            rows = sorted(r for r in rec.row_noise if r[0] == kind)
            if not rows:
                continue
            d = sorted(r[1] for r in rows)
            dm = sorted(r[2] for r in rows)
            print(f"drafted row against greedy's forward over the same cache ({kind}, "
                  f"{len(rows)} rows): max |logit difference| p50 {d[len(d) // 2]:.1e}, "
                  f"p99 {d[int(len(d) * 0.99)]:.1e}, max {d[-1]:.1e}; "
                  f"margin moved max {dm[-1]:.1e}")
    return figures


if __name__ == "__main__":
    sys.exit(main())
