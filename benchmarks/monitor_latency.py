"""Where the monitor's latency goes, per completion: the reporting set (or the traces given)
replayed at the defaults with the monitor on, timers around its three parts, and the same
traces with the monitor off, interleaved event by event (``replay_together``).

    python benchmarks/monitor_latency.py [--rounds 2] [TRACE ...]

The parts, each summed over a completion: ``setup`` (the analysis at the cursor:
``OpenAnalysis.at_cursor``, the monitor state and the syntax guard), ``steps`` (the masks
and the state's advance at every decoding step: ``steps.masked`` and ``steps.advance``
with a monitor) and ``guard`` (the syntax guard's checks of the shown drafts:
``presentation.guarded``). Prints each part's p50 and mean in ms, the completions'
latency p50 with the monitor on and off, and the difference. ``--steps`` adds the steps'
pieces, each's ms a completion (mean, the monitor on) and us a call: the masked logits
(``steps.masked``), a new state's mask (``MonitorState._mask``), a mask the cache had to
build (``MaskCache`` misses) or found, the state's advance (``steps.advance``) and the
forced name; greedy decoding's (the defaults' automatic completions).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from inkling.analysis.monitor import MonitorState
from inkling.analysis.token_masks import MaskCache
from inkling.completion import open_analysis, presentation
from inkling.completion.decoding import greedy, steps
from inkling.completion.engine import Engine
from inkling.completion.options import InklingOptions
from inkling.evaluation.replay import Replayer, replay_together
from inkling.evaluation.syntax_check import SyntaxChecker
from inkling.evaluation.trace_file import read_trace

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_traces import set_paths  # noqa: E402

PARTS = ("setup", "steps", "guard")
spent = dict.fromkeys(PARTS, 0.0)


def timed(part: str, fn, when=lambda *a: True):
    """``fn`` with its time added to ``part``'s where ``when(*args)``."""
    return _timer(fn, when, lambda seconds: spent.__setitem__(part, spent[part] + seconds))


def _timer(fn, when, record):
    def wrapper(*args, **kw):
        if not when(*args):
            return fn(*args, **kw)
        t0 = time.perf_counter()
        try:
            return fn(*args, **kw)
        finally:
            record(time.perf_counter() - t0)
    return wrapper


def instrument() -> None:
    """Timers around the parts, where the decoders and the Engine look them up."""
    open_analysis.OpenAnalysis.at_cursor = timed("setup", open_analysis.OpenAnalysis.at_cursor)
    with_monitor = lambda _x, monitor, *a: monitor is not None        # noqa: E731
    for module in (steps, greedy):
        module.masked = timed("steps", steps.masked, with_monitor)
        module.advance = timed("steps", steps.advance, lambda monitor, *a: monitor is not None)
    presentation.guarded = timed("guard", presentation.guarded,
                                 lambda _text, guard: guard is not None)


PIECES = ("masked logits", "a state's mask", "mask built", "mask found", "advance",
          "forced name")
pieces = {p: [0.0, 0] for p in PIECES}             # seconds, calls (the monitor on)


def _piece(name: str, fn, when=lambda *a: True):
    """``fn`` with its time and calls added to piece ``name``'s where ``when(*args)``."""
    def record(seconds: float) -> None:
        pieces[name][0] += seconds
        pieces[name][1] += 1
    return _timer(fn, when, record)


def instrument_steps() -> None:
    """Timers on the steps' pieces (``--steps``)."""
    with_monitor = lambda _x, monitor, *a: monitor is not None        # noqa: E731
    greedy.masked = timed("steps", _piece("masked logits", steps.masked, with_monitor),
                          with_monitor)
    greedy.advance = timed("steps", _piece("advance", steps.advance,
                                           lambda monitor, *a: monitor is not None),
                           lambda monitor, *a: monitor is not None)
    MonitorState._mask = _piece("a state's mask", MonitorState._mask)
    MonitorState.forced_text = _piece("forced name", MonitorState.forced_text)
    cached = MaskCache._cached

    def sorted_cached(self, key, device, make_recipe):
        found = (key, "cpu" if device is None else str(device)) in self._dense
        return _piece("mask found" if found else "mask built", cached)(
            self, key, device, make_recipe)
    MaskCache._cached = sorted_cached


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("traces", nargs="*")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--steps", action="store_true", help="time the steps' pieces too")
    args = ap.parse_args()
    paths = args.traces or set_paths("reporting")
    traces = [read_trace(p) for p in paths]
    base = InklingOptions()
    runtime = Engine(base).load_model()
    checker = SyntaxChecker()
    replayers = [Replayer(base.merged({"completion": {"monitor": m}}), runtime, checker)
                 for m in ("on", "off")]
    instrument()
    if args.steps:
        instrument_steps()
    original = Engine._complete
    parts: dict[str, list[float]] = {p: [] for p in PARTS}
    latency: dict[str, list[float]] = {"on": [], "off": []}

    def complete(self, *a, **kw):                  # each completion's parts, apart
        spent.update(dict.fromkeys(PARTS, 0.0))
        out = original(self, *a, **kw)
        if self.options.completion.monitor == "on":
            for p in PARTS:
                parts[p].append(spent[p] * 1000)
        return out
    Engine._complete = complete
    for r in range(args.rounds + 1):               # round 0 warms the caches, not counted
        for trace in traces:
            for mode, result in zip(("on", "off"), replay_together(replayers, trace)):
                if r:
                    latency[mode] += [c.latency_ms for c in result.completions]
        if r == 0:
            parts = {p: [] for p in PARTS}
            for p in PIECES:
                pieces[p] = [0.0, 0]
    for p in PARTS:
        print(f"{p:6} p50 {statistics.median(parts[p]):6.2f} ms  mean "
              f"{statistics.fmean(parts[p]):6.2f} ms")
    if args.steps:                                 # pieces time the monitor on only
        for p in PIECES:
            seconds, calls = pieces[p]
            print(f"  {p:15} {seconds * 1000 / len(parts['steps']):6.3f} ms a completion, "
                  f"{seconds * 1e6 / max(calls, 1):6.1f} us a call ({calls} calls)")
    on, off = statistics.median(latency["on"]), statistics.median(latency["off"])
    print(f"completion latency p50: monitor on {on:.2f} ms, off {off:.2f} ms, "
          f"difference {on - off:.2f} ms ({len(latency['on'])} completions a mode)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
