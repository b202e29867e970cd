"""What the monitor's latency would be if its analysis cost nothing: the bound under the
defaults' latency check (their p50 at most ``draft=none, monitor=off``'s).

The reporting set (or the traces given) replayed in five modes, interleaved event by event
(``replay_together``: each edit and completion in every mode's session before the next,
the order turning; each session's engine holds its mode's options, by which the oracle
knows whose completion it is in):

- ``off``: the monitor off (the check's baseline, drafting as the defaults choose it);
- ``on``: the defaults;
- ``on-noguard``: the defaults, the syntax guard left out of the shown drafts;
- ``oracle``: the masks and forced names the monitor gave, replayed: each greedy step
  applies the mask ``on`` applied at that step (``logits + bias``, as ``steps.masked``
  does) and takes the forced tokens it took, while the state's advance, its site, its
  mask and its forced name are never computed; the monitor and the guard at the cursor
  are made as in ``on`` and the guard checks the drafts;
- ``oracle-noguard``: the same without the guard.

The oracle decodes what ``on`` decodes (the first drafts are compared, and a mismatch is
printed: then its figures are void), so ``on - oracle`` at p50 is what the analysis at the
decoding steps costs, and ``oracle - oracle-noguard`` what the guard costs. The masks are
recorded in a first pass (round 0, not timed) of ``on``.

    python benchmarks/monitor_floor.py [--rounds 2] [TRACE ...]

Prints each round's p50s as it ends, then each mode's p50 (its ratio to ``off``) and mean.
Only greedy decoding without drafting is replayed this way (the defaults' automatic
completions on the CPU); a completion decoded otherwise stops the script with that said.
"""
from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

from inkling.completion.decoding import greedy, steps
from inkling.completion.engine import Engine
from inkling.completion.options import InklingOptions
from inkling.evaluation.replay import Replayer, replay_together
from inkling.evaluation.syntax_check import SyntaxChecker
from inkling.evaluation.trace_file import read_trace

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_traces import set_paths  # noqa: E402

MODES = ("off", "on", "on-noguard", "oracle", "oracle-noguard")


class Oracle:
    """The masks and forced ids of ``on``, per (trace, completion), in the order greedy
    decoding asked for them; ``mode`` says whether to record, replay or pass through."""

    def __init__(self):
        self.mode = "off"
        self.recorded: dict[tuple, list] = {}
        self.key: tuple = ()
        self.at = 0
        self.trace = 0
        self.sessions: list[tuple] = []            # (options, mode) of the trace's sessions
        self.completions: dict[str, int] = {}      # completions begun so far, by mode

    def start(self, trace: int, sessions: list[tuple]) -> None:
        self.trace, self.sessions, self.completions = trace, sessions, {}

    def next_completion(self, options) -> None:
        """A completion begins in the session whose engine holds ``options``."""
        self.mode = next(m for o, m in self.sessions if o is options)
        n = self.completions[self.mode] = self.completions.get(self.mode, -1) + 1
        self.key, self.at = (self.trace, n), 0
        if self.mode == "record":
            self.recorded[self.key] = []

    def replayed(self, kind: str):
        got, value = self.recorded[self.key][self.at]
        if got != kind:
            sys.exit(f"the oracle asked for a {kind} where {got} was recorded "
                     f"(trace {self.key[0]}, completion {self.key[1]}, call {self.at})")
        self.at += 1
        return value

    # greedy decoding's three calls, in its module's namespace
    def masked(self, logits, monitor):
        if self.mode.startswith("oracle"):
            mask = self.replayed("mask")
            return logits if mask is None else logits + steps.BIASES.bias(mask, logits)
        if self.mode == "record":
            mask = None if monitor is None else monitor.mask(logits.device)
            self.recorded[self.key].append(("mask", mask))
        return steps.masked(logits, monitor)

    def forced_ids(self, monitor, encode):
        if self.mode.startswith("oracle"):
            return self.replayed("forced")
        ids = steps.forced_ids(monitor, encode)
        if self.mode == "record":
            self.recorded[self.key].append(("forced", ids))
        return ids

    def advance(self, monitor, tok):
        return monitor if self.mode.startswith("oracle") else steps.advance(monitor, tok)


def instrument(oracle: Oracle) -> None:
    greedy.masked, greedy.forced_ids, greedy.advance = (oracle.masked, oracle.forced_ids,
                                                        oracle.advance)
    decode, complete = Engine._decode, Engine._complete

    def _decode(self, at, plan, prompt, cache, synced, drafting, cancelled):
        if plan.decoder != "greedy" or drafting.drafter is not None:
            sys.exit(f"a completion decoded by {plan.decoder}"
                     f"{', drafted' if drafting.drafter is not None else ''}: only greedy "
                     "decoding undrafted is replayed by the oracle")
        outs, forwards, guard = decode(self, at, plan, prompt, cache, synced, drafting,
                                       cancelled)
        return outs, forwards, None if oracle.mode.endswith("noguard") else guard

    def _complete(self, *a, **kw):
        oracle.next_completion(self.options)
        return complete(self, *a, **kw)
    Engine._decode, Engine._complete = _decode, _complete


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("traces", nargs="*")
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    paths = args.traces or set_paths("reporting")
    traces = [read_trace(p) for p in paths]
    base = InklingOptions()
    runtime, checker = Engine(base).load_model(), SyntaxChecker()
    replayers = {m: Replayer(base.merged({"completion": {"monitor": "off" if m == "off"
                                                         else "on"}}), runtime, checker)
                 for m in ("record",) + MODES}
    oracle = Oracle()
    instrument(oracle)
    latency: dict[str, list[float]] = {m: [] for m in MODES}
    first: dict[tuple, str] = {}
    mismatches = {"on": 0, "oracle": 0}          # first drafts unlike the recording's
    for r in range(args.rounds + 1):               # round 0 records, not timed
        for t, trace in enumerate(traces):
            modes = ("record",) if r == 0 else MODES
            oracle.start(t, [(replayers[m].options, m) for m in modes])
            for mode, result in zip(modes, replay_together([replayers[m] for m in modes],
                                                           trace)):
                for c, done in enumerate(result.completions):
                    text = done.drafts[0] if done.drafts else ""
                    if mode == "record":
                        first[t, c] = text
                    elif mode in mismatches:
                        mismatches[mode] += first[t, c] != text
                if r:
                    latency[mode] += [c.latency_ms for c in result.completions]
        if r:
            print(f"round {r}: p50 " + ", ".join(
                f"{m} {statistics.median(latency[m]):.2f}" for m in MODES) + " ms", flush=True)
    off = statistics.median(latency["off"])
    for m in MODES:
        p50 = statistics.median(latency[m])
        print(f"{m:15} p50 {p50:7.2f} ms  x{p50 / off:.3f}  mean "
              f"{statistics.fmean(latency[m]):7.2f} ms  ({len(latency[m])} completions)")
    p50 = {m: statistics.median(latency[m]) for m in MODES}
    print(f"the analysis at the steps (on - oracle) {p50['on'] - p50['oracle']:.2f} ms at p50; "
          f"the guard (oracle - oracle-noguard) {p50['oracle'] - p50['oracle-noguard']:.2f} ms")
    print("first drafts unlike the recording's: " + ", ".join(
        f"{m} {n}" for m, n in mismatches.items())
          + (" (the oracle's figures are void)" if mismatches["oracle"] else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
