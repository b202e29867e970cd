"""A decoding step: transformers' forward (reference) against the compact and native forwards, side by side.

    python benchmarks/decode_step.py [--model PATH] [--context 900] [--rounds 7]
                                     [--replay TRACE ...] [--decoders ...] [--drafts ...]
                                     [--forwards reference,compact,native] [--replay-only]

1. One forward of n rows (a chain, as a verified draft) after ``--context`` cached
   tokens, n = 1, 4, 16, 64: milliseconds of wall time and of this thread's CPU time
   (the CPU time is what the step costs; the wall time also holds the waits for a core on
   a shared machine). Rounds alternate between the forwards, forward and backward.
2. Greedy decoding of 48 tokens after real prompts (standard-library code): ms per decoded
   token, and whether the tokens are the same.
3. With ``--replay``: the traces replayed through the Engine (as ``inkling replay`` does)
   under each decoder x drafting combination with each forward, interleaved trace by trace;
   per combination latency p50 / p95, model ms per decoded token, and every completion's
   token ids and suggestions compared with the reference forward's.
"""
from __future__ import annotations

import argparse
import functools
import statistics
import sys
import time
from pathlib import Path

import torch

from inkling.runtime.errors import ModelError
from inkling.runtime.model_loader import load_runtime
from inkling.cache.prompt_cache import PromptCache
from inkling.models import BUNDLED_MODEL_DIR

FORWARDS = ("reference", "compact", "native")
ROWS = (1, 4, 8, 16, 32, 64)


def timed(fn) -> tuple[float, float]:
    """(wall ms, CPU ms of this thread) of one call."""
    w, c = time.perf_counter(), time.thread_time()
    fn()
    return (time.perf_counter() - w) * 1000, (time.thread_time() - c) * 1000


def forward_table(runtime, context: list[int], rounds: int, reps: int,
                  forwards: tuple[str, ...]) -> None:
    caches = {f: PromptCache(runtime, "full", forward=f) for f in forwards}
    for c in caches.values():
        c.extend(context, last_only=True)
    ms = {(f, n): ([], []) for f in forwards for n in ROWS}
    for r in range(rounds):
        for f in forwards if r % 2 else forwards[::-1]:
            c = caches[f]
            for n in ROWS:
                tokens, parents = [100 + i for i in range(n)], [-1] + list(range(n - 1))
                wall, cpu = [], []
                for _ in range(reps):
                    w, u = timed(lambda: c.extend_tree(tokens, parents))
                    c.truncate(len(context))
                    wall.append(w)
                    cpu.append(u)
                ms[f, n][0].append(statistics.median(wall))
                ms[f, n][1].append(statistics.median(cpu))
    print(f"\n1. forward of n rows after {len(context)} cached tokens, ms p50 "
          f"(median of {rounds} alternating rounds of {reps})")
    print(f"{'rows':<22}" + "".join(f"{n:>14}" for n in ROWS))
    for f in forwards:
        print(f"{f + ' wall / cpu':<22}" + "".join(
            f"{statistics.median(ms[f, n][0]):>7.2f} /{statistics.median(ms[f, n][1]):>5.2f}"
            for n in ROWS))
    for f in forwards[1:]:
        print(f"{f + ' / reference':<22}" + "".join(
            f"{statistics.median(ms[f, n][1]) / statistics.median(ms['reference', n][1]):>14.2f}"
            for n in ROWS) + "   (cpu)")


def prompts(runtime, count: int, length: int) -> list[list[int]]:
    from inkling.models.corpus import stdlib_root
    ids = runtime.encode((stdlib_root() / "textwrap.py").read_text(encoding="utf-8"))
    step = max(1, (len(ids) - length) // count)
    return [ids[i * step:i * step + length] for i in range(count)]


def greedy(cache: PromptCache, prompt: list[int], steps: int) -> tuple[list[int], float, float]:
    """(tokens, wall ms, cpu ms) of ``steps`` greedy one-row forwards after ``prompt``."""
    cache.reset()
    logits, out = cache.extend(prompt, last_only=True)[-1], []
    w, c = time.perf_counter(), time.thread_time()
    for _ in range(steps):
        out.append(int(logits.argmax()))
        logits = cache.extend([out[-1]])[-1]
    return out, (time.perf_counter() - w) * 1000, (time.thread_time() - c) * 1000


def greedy_table(runtime, rounds: int, forwards: tuple[str, ...], steps: int = 48) -> None:
    caches = {f: PromptCache(runtime, "full", forward=f) for f in forwards}
    texts = prompts(runtime, 6, 600)
    per = {f: ([], []) for f in forwards}
    same, total = {f: 0 for f in forwards}, 0
    for r in range(rounds):
        for p in texts:
            got = {}
            for f in forwards if r % 2 else forwards[::-1]:
                tokens, wall, cpu = greedy(caches[f], p, steps)
                got[f] = tokens
                per[f][0].append(wall / steps)
                per[f][1].append(cpu / steps)
            for f in forwards:
                same[f] += got["reference"] == got[f]
            total += 1
    print(f"\n2. greedy decoding, {steps} tokens after each of {len(texts)} 600-token prompts "
          f"x {rounds} rounds: ms per decoded token, p50")
    for f in forwards:
        print(f"{f:<12} wall {statistics.median(per[f][0]):6.2f}   cpu "
              f"{statistics.median(per[f][1]):6.2f}")
    for f in forwards[1:]:
        ratio = statistics.median(per[f][1]) / statistics.median(per["reference"][1])
        print(f"{f} / reference (cpu) {ratio:.2f}; tokens identical in {same[f]} of {total}")


def replay_table(runtime, paths: list[str], decoders: list[str], drafts: list[str],
                 forwards: tuple[str, ...]) -> int:
    """Section 3; returns how many completions differ between the forwards."""
    from inkling.completion import engine as engine_module
    from inkling.completion.engine import Engine
    from inkling.completion.options import InklingOptions
    from inkling.evaluation.replay import Replayer
    from inkling.evaluation.syntax_check import SyntaxChecker
    from inkling.evaluation.trace_file import read_trace
    traces = [read_trace(p) for p in paths]
    checker = SyntaxChecker()
    decode = engine_module.decode_drafts          # wrapped where the engine looks it up
    datastore = Engine(InklingOptions(), runtime).build_datastore()
    combos = [(d, m) for d in decoders for m in drafts]
    results = {(c, f): [] for c in combos for f in forwards}
    tokens = {(c, f): [] for c in combos for f in forwards}
    for trace in traces:
        for combo in combos:
            for f in forwards:
                changes = {"model": {"forward": f}, "completion": {"draft": combo[1]}}
                if combo[0] != "defaults":
                    changes["completion"]["decoder"] = combo[0]
                    if combo[0] == "greedy":
                        changes["completion"]["drafts"] = 1
                opts = InklingOptions().merged(changes)
                seen = tokens[combo, f]

                def recorded(request, decoder, _seen=seen):
                    drafts_, forwards = decode(request, decoder)
                    _seen.append([list(d.token_ids) for d in drafts_])
                    return drafts_, forwards
                engine_module.decode_drafts = recorded
                meter = engine_module.AcceptanceMeter   # every completion drafts, idle too
                engine_module.AcceptanceMeter = functools.partial(meter, explore_completions=1)
                try:
                    results[combo, f].append(Replayer(opts, runtime, checker, datastore)
                                             .replay(trace))
                finally:
                    engine_module.decode_drafts, engine_module.AcceptanceMeter = decode, meter
        print(f"  replayed {trace.name}", file=sys.stderr, flush=True)
    print(f"\n3. replay of {len(traces)} traces, each decoder x drafting with each forward "
          "(interleaved trace by trace)")
    print(f"{'decoder':<12}{'draft':<15}{'forward':<11}{'completions':>12}{'p50':>8}{'p95':>8}"
          f"{'model ms/token':>16}{'identical':>11}")
    differ = 0
    for combo in combos:
        for f in forwards:
            comps = [c for t in results[combo, f] for c in t.completions]
            lat = sorted(c.latency_ms for c in comps)
            per_token = sum(c.model_ms for c in comps) / max(1, sum(c.tokens for c in comps))
            same = ""
            if f != "reference":
                ref = [c for t in results[combo, "reference"] for c in t.completions]
                pairs = list(zip(tokens[combo, "reference"], tokens[combo, f]))
                bad = sum(a != b for a, b in pairs) + sum(
                    a.drafts != b.drafts for a, b in zip(ref, comps))
                differ += bad
                same = f"{len(pairs) - bad}/{len(pairs)}"
            print(f"{combo[0]:<12}{combo[1]:<15}{f:<11}{len(comps):>12}"
                  f"{statistics.median(lat):>8.1f}{lat[int(0.95 * (len(lat) - 1))]:>8.1f}"
                  f"{per_token:>16.2f}{same:>11}")
    return differ


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default=str(BUNDLED_MODEL_DIR))
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--context", type=int, default=900)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--replay", nargs="*", default=[], metavar="TRACE")
    ap.add_argument("--decoders", default="defaults,greedy,branches,superposed",
                    help="'defaults' keeps the options' decoder (superposed for invoked k, "
                    "greedy while typing)")
    ap.add_argument("--drafts", default="none,suffix")
    ap.add_argument("--forwards", default=",".join(FORWARDS),
                    help="reference first, then the forwards compared with it")
    ap.add_argument("--replay-only", action="store_true",
                    help="only section 3 (the forwards' identity over the traces)")
    args = ap.parse_args()
    forwards = tuple(args.forwards.split(","))
    if forwards[0] != "reference" or not set(forwards) <= set(FORWARDS):
        ap.error(f"--forwards: reference first, then some of {', '.join(FORWARDS[1:])}")
    runtime = load_runtime(args.model, device=args.device, dtype="float32")
    for f in forwards:
        try:
            runtime.forward_kind(f)           # a forward the model lacks: the reason, now
        except ModelError as exc:
            ap.error(str(exc))
    print(f"model {runtime.path.name}, {runtime.device}, float32, "
          f"{torch.get_num_threads()} threads")
    context = [10 + (i * 37) % (runtime.vocab_size - 10) for i in range(args.context)]
    if not args.replay_only:
        forward_table(runtime, context, args.rounds, args.reps, forwards)
        greedy_table(runtime, max(1, args.rounds // 3), forwards)
    if args.replay:
        differ = replay_table(runtime, args.replay, args.decoders.split(","),
                              args.drafts.split(","), forwards)
        print(f"completions that differ between the forwards: {differ}")
        return 1 if differ else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
