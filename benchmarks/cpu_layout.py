"""Forward time on the CPU with transformers' linear layers and with inkling's layout.

    python benchmarks/cpu_layout.py [--model PATH] [--context 900] [--rounds 5]

Loads the model twice, as transformers lays it out (``nn.Linear``, weights [out, in])
and as inkling's runtime does (``InputMajorLinear``, weights [in, out]), and times one
decoding forward of n rows (a chain, as a verified draft) after ``--context`` cached
tokens, for n = 1, 2, 3, 5, 8 and 16. Rounds alternate between the two so that machine
noise hits both alike; the figures are medians over rounds of per-round medians.

A second table times inkling's runtime with transformers' SDPA attention (which
repeats a GQA model's cached keys and values for a masked forward of several rows) and
with packed GQA attention (``cache/gqa_attention.py``), switching the one loaded model
between the two every round: two model instances differ by several percent on this
machine for reasons of their own, which would hide a difference of that size.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

from inkling.cache.gqa_attention import NAME as PACKED
from inkling.cache.model_loader import load_runtime
from inkling.cache.prompt_cache import PromptCache
from inkling.models import BUNDLED_MODEL_DIR

ROWS = (1, 2, 3, 5, 8, 16)


def forward_ms(runtime, context: list[int], n: int, reps: int) -> float:
    """Median ms of an n-row chain forward after ``context`` cached tokens."""
    cache = PromptCache(runtime, mode="full")
    cache.extend(context, last_only=True)
    tokens, parents = [100 + i for i in range(n)], [-1] + list(range(n - 1))
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        cache.extend_tree(tokens, parents)
        times.append((time.perf_counter() - t0) * 1000)
        cache.truncate(len(context))
    return statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default=str(BUNDLED_MODEL_DIR))
    ap.add_argument("--context", type=int, default=900)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--reps", type=int, default=40)
    args = ap.parse_args()
    inkling = load_runtime(args.model, device="cpu", dtype="float32")
    plain = load_runtime(args.model, device="cpu", dtype="float32")
    from transformers import AutoModelForCausalLM
    plain.model = AutoModelForCausalLM.from_pretrained(
        plain.path, dtype=torch.float32, local_files_only=True, attn_implementation="sdpa").eval()
    context = [10 + i % (inkling.vocab_size - 10) for i in range(args.context)]
    runs = {"transformers": plain, "inkling": inkling}
    ms = {(name, n): [] for name in runs for n in ROWS}
    for _ in range(args.rounds):
        for name, rt in runs.items():
            for n in ROWS:
                ms[name, n].append(forward_ms(rt, context, n, args.reps))
    print(f"model {inkling.path.name}, cpu, {torch.get_num_threads()} threads, "
          f"{args.context} cached tokens; forward ms (median of {args.rounds} rounds)")
    print(f"{'rows':<13}" + "".join(f"{n:>8}" for n in ROWS))
    for name in runs:
        print(f"{name:<13}" + "".join(f"{statistics.median(ms[name, n]):>8.2f}" for n in ROWS))
    ratio = [statistics.median(ms["inkling", n]) / statistics.median(ms["transformers", n])
             for n in ROWS]
    print(f"{'inkling/hf':<13}" + "".join(f"{r:>8.2f}" for r in ratio))
    attention(inkling, context, args.rounds * 3, args.reps // 2)
    return 0


def attention(runtime, context: list[int], rounds: int, reps: int) -> None:
    """The same model with transformers' SDPA and with packed GQA, switched every round."""
    if runtime.model.config._attn_implementation != PACKED:
        print("\nattention: the model has no grouped key/value heads; nothing to compare")
        return
    ms = {(name, n): [] for name in ("sdpa", PACKED) for n in ROWS}
    for r in range(rounds):
        for name in ("sdpa", PACKED) if r % 2 else (PACKED, "sdpa"):
            runtime.model.set_attn_implementation(name)
            for n in ROWS:
                ms[name, n].append(forward_ms(runtime, context, n, reps))
    runtime.model.set_attn_implementation(PACKED)
    print(f"\nattention, one model switched between the two ({rounds} rounds)")
    print(f"{'rows':<13}" + "".join(f"{n:>8}" for n in ROWS))
    for name, label in (("sdpa", "repeat_kv"), (PACKED, "packed gqa")):
        print(f"{label:<13}" + "".join(f"{statistics.median(ms[name, n]):>8.2f}" for n in ROWS))
    ratio = [statistics.median(ms[PACKED, n]) / statistics.median(ms["sdpa", n]) for n in ROWS]
    print(f"{'packed/repeat':<13}" + "".join(f"{r:>8.2f}" for r in ratio))


if __name__ == "__main__":
    sys.exit(main())
