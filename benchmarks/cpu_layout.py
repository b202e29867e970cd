"""Forward time on the CPU with transformers' linear layers and with inkling's layout.

    python benchmarks/cpu_layout.py [--model PATH] [--context 900] [--rounds 5]

Loads the model twice, as transformers lays it out (``nn.Linear``, weights [out, in])
and as inkling's runtime does (``InputMajorLinear``, weights [in, out]), and times one
decoding forward of n rows (a chain, as a verified draft) after ``--context`` cached
tokens, for n = 1, 2, 3, 5, 8 and 16. Rounds alternate between the two so that machine
noise hits both alike; the figures are medians over rounds of per-round medians.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

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
    return 0


if __name__ == "__main__":
    sys.exit(main())
