"""The monitor's decoding steps alone, this tree's against another commit's, side by side:
the reporting set (or the traces given) is replayed once at the defaults with every call
greedy decoding makes on a monitor state recorded (the state's advance by a token or a
text, its mask, its forced name), then those calls are made again, without the model, on
fresh states of this tree's ``MonitorState`` and of ``--against``'s (its
``analysis/monitor.py``, ``trigger_site.py`` and ``python_scanner.py`` loaded beside this
tree's), in turn, ``--repeats`` times.

    python benchmarks/monitor_steps.py [--against HEAD] [--repeats 6] [--pollute MB] [TRACE ...]

Each state the recording starts from is made again from its scanner state, its context
(with empty caches: each completion's context starts empty) and the names it bound; the
mask cache is the replay's, warm (``monitor_latency.py --steps`` times the masks it had
to build). Prints, for each repeat and implementation, the ms the calls took in all and by
kind, and the calls whose mask or forced name differ from the recording's (any such count
makes the comparison void); then each one's best total, its ratio to this tree's and its
time a step. A recorded state's context reads the names a free read may name as they were
when it was recorded.

``--pollute MB`` streams MB of memory through the caches before each step (untimed): what a
decoding step's forward does between two steps (the bundled model's weights are about 12
MB), so that the calls are timed as they run in a replay, from cold caches, rather than
back to back from warm ones. Each implementation is then timed both ways, in turn.
"""
from __future__ import annotations

import argparse
import dataclasses
import gc
import subprocess
import sys
import time
import types
from pathlib import Path

import numpy as np

from inkling.analysis import monitor as this
from inkling.completion.engine import Engine
from inkling.completion.options import InklingOptions
from inkling.evaluation.replay import Replayer
from inkling.evaluation.syntax_check import SyntaxChecker
from inkling.evaluation.trace_file import read_trace

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_traces import set_paths  # noqa: E402

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
KINDS = ("advance_token", "advance", "mask", "forced_text")


class Recording:
    """The calls made on monitor states while ``on``; states numbered as first seen."""

    def __init__(self):
        self.calls: list[tuple] = []        # (kind, state, argument, result or new state)
        self.roots: dict[int, tuple] = {}   # state -> (context, scan, assigned, bound)
        self.contexts: dict[int, object] = {}
        self._number: dict[int, int] = {}
        self._states: list = []             # every state seen, kept alive (ids stay unique)
        self.on = False
        self.depth = 0                      # advance_token calls advance: one call counted

    def number(self, state) -> int:
        n = self._number.get(id(state))
        if n is None or self._states[n] is not state:
            n = self._number[id(state)] = len(self._states)
            self._states.append(state)
            self.contexts.setdefault(id(state.context), state.context)
            self.roots[n] = (id(state.context), state.scan, state.assigned, state.bound)
        return n

    def made(self, state) -> int:
        n = self._number[id(state)] = len(self._states)
        self._states.append(state)
        return n

    def instrument(self) -> dict:
        originals = {k: getattr(this.MonitorState, k) for k in KINDS}
        rec = self

        def advancing(kind):
            def call(state, arg):
                rec.depth += 1
                try:
                    out = originals[kind](state, arg)
                finally:
                    rec.depth -= 1
                if rec.on and not rec.depth:
                    n = rec.number(state)
                    rec.calls.append((kind, n, arg, n if out is state else rec.made(out)))
                return out
            return call

        def mask(state, device=None):
            out = originals["mask"](state, device)
            if rec.on:
                rec.calls.append(("mask", rec.number(state), device, _bits(out)))
            return out

        def forced_text(state):
            out = originals["forced_text"](state)
            if rec.on:
                rec.calls.append(("forced_text", rec.number(state), None, out))
            return out
        for kind in ("advance_token", "advance"):
            setattr(this.MonitorState, kind, advancing(kind))
        this.MonitorState.mask, this.MonitorState.forced_text = mask, forced_text
        decode = Engine._decode

        def _decode(engine, *a, **kw):
            rec.on = True
            try:
                return decode(engine, *a, **kw)
            finally:
                rec.on = False
        Engine._decode = _decode
        return originals


def _bits(mask) -> bytes | None:
    return None if mask is None else mask.numpy().tobytes()


def loaded_at(rev: str):
    """``MonitorState`` of commit ``rev``: its monitor, trigger sites and scanner loaded as
    modules beside this tree's (the rest of the analysis is this tree's)."""
    def source(path):
        return subprocess.run(["git", "-C", str(REPO), "show", f"{rev}:{path}"],
                              capture_output=True, text=True, check=True).stdout
    renamed = {"python_scanner": "python_scanner_then", "trigger_site": "trigger_site_then",
               "monitor": "monitor_then"}
    modules = {}
    for name in ("python_scanner", "trigger_site", "monitor"):
        text = source(f"analysis/{name}.py")
        for old, new in renamed.items():
            text = text.replace(f"from .{old} import", f"from .{new} import")
        module = modules[name] = types.ModuleType(f"inkling.analysis.{renamed[name]}")
        module.__package__ = "inkling.analysis"
        sys.modules[module.__name__] = module
        exec(compile(text, f"{rev}:analysis/{name}.py", "exec"), module.__dict__)
    return modules["monitor"].MonitorState, modules["python_scanner"]


def scan_of(scan, scanner):
    """``scan`` as a state of ``scanner`` (the module), field by field."""
    if scanner is None:
        return scan
    frames = tuple(scanner.Frame(**vars(f)) for f in scan.frames)
    return scanner.ScanState(**{**vars(scan), "frames": frames})


def replayed(rec: Recording, cls, scanner=None, pollute: np.ndarray | None = None
             ) -> tuple[dict, int]:
    """(seconds by kind, calls whose result differs) of the recorded calls made again on
    fresh states of ``cls`` (their scanner states ``scanner``'s: None, this tree's);
    ``pollute`` read through before each step (a mask asked for starts one), untimed."""
    fresh = {}
    for key, context in rec.contexts.items():
        fresh[key] = dataclasses.replace(context, _allowed={}, _members={}, _both={})
        if "free_names" in context.__dict__:       # as read when recorded
            fresh[key].__dict__["free_names"] = context.__dict__["free_names"]
    states, spent, differ = {}, dict.fromkeys(KINDS, 0.0), 0
    sites = sys.modules[cls.__module__.replace(".monitor", ".trigger_site")]   # its own
    if hasattr(sites, "forget_readings"):          # kept readings: none yet, as in a new server
        sites.forget_readings()
    clock = time.perf_counter
    gc.collect()
    gc.disable()                                   # the same pauses for both (none)
    try:
        for kind, n, arg, result in rec.calls:
            state = states.get(n)
            if state is None:
                context, scan, assigned, bound = rec.roots[n]
                state = states[n] = cls(fresh[context], scan_of(scan, scanner), assigned,
                                        bound)
            if pollute is not None and kind == "mask":
                pollute.sum()                      # a forward's reads between two steps
            t0 = clock()
            if kind == "mask":
                out = state.mask(arg)
                spent[kind] += clock() - t0
                differ += _bits(out) != result
            elif kind == "forced_text":
                out = state.forced_text()
                spent[kind] += clock() - t0
                differ += out != result
            else:
                states[result] = getattr(state, kind)(arg)
                spent[kind] += clock() - t0
    finally:
        gc.enable()
    return spent, differ


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("traces", nargs="*")
    ap.add_argument("--against", default="HEAD", help="the commit compared (default HEAD)")
    ap.add_argument("--repeats", type=int, default=6)
    ap.add_argument("--pollute", type=float, default=0.0, metavar="MB",
                    help="MB read through the caches before each step (default 0: none)")
    args = ap.parse_args()
    pollute = np.ones(int(args.pollute * (1 << 20)), np.uint8) if args.pollute else None
    paths = args.traces or set_paths("reporting")
    then, then_scanner = loaded_at(args.against)
    rec = Recording()
    originals = rec.instrument()
    base = InklingOptions()
    replayer = Replayer(base, Engine(base).load_model(), SyntaxChecker())
    for path in paths:
        replayer.replay(read_trace(path))
    for kind, method in originals.items():        # the replays below call them bare
        setattr(this.MonitorState, kind, method)
    counts = {k: sum(c[0] == k for c in rec.calls) for k in KINDS}
    print(f"{len(rec.calls)} calls ({', '.join(f'{k} {n}' for k, n in counts.items())}) "
          f"from {len(rec.roots)} states at the cursor")
    variants = [(label, cls, scanner, None) for label, cls, scanner in (
        ("this tree", this.MonitorState, None), (args.against, then, then_scanner))]
    if pollute is not None:                        # each also from cold caches, in turn
        variants = [v for label, cls, scanner, _ in variants for v in (
            (label, cls, scanner, None), (f"{label} cold", cls, scanner, pollute))]
    best = {}
    for r in range(args.repeats):
        for label, cls, scanner, reads in variants:
            spent, differ = replayed(rec, cls, scanner, reads)
            total = sum(spent.values())
            best[label] = min(best.get(label, total), total)
            print(f"{r + 1}  {label:>15}  {total * 1000:7.1f} ms  " + "  ".join(
                f"{k} {s * 1000:6.1f}" for k, s in spent.items()) + f"  differ {differ}",
                  flush=True)
    steps = counts["mask"]
    for label, total in best.items():
        print(f"best {label:>15}  {total * 1000:7.1f} ms  x{total / best['this tree']:.3f}"
              f"  {total / steps * 1e6:6.1f} us a step ({steps} steps)")
    if pollute is not None:
        print(f"cold: {args.pollute:g} MB read through the caches before each step")
    return 0


if __name__ == "__main__":
    sys.exit(main())
