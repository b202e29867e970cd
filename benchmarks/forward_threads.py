"""Does a second CPU thread speed up the forward? One forward of n rows after cached
tokens, the forward's threads held at 1 and at 2 (the runtime's choice pinned),
alternated round by round.

    python benchmarks/forward_threads.py [--model PATH] [--context 900] [--rounds 30]

Prints, per row count (1, 8, 16: a decoding step, a draft tree), the median wall ms with
each thread count and their ratio. Run it on a quiet machine: with another process on a
core, the two-thread step waits for it (see benchmarks/README.md).
"""
from __future__ import annotations

import argparse
import statistics
import time


from inkling.runtime.model_loader import load_runtime
from inkling.cache.prompt_cache import PromptCache
from inkling.models import BUNDLED_MODEL_DIR

ROWS = (1, 8, 16)
THREADS = (1, 2)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default=str(BUNDLED_MODEL_DIR))
    ap.add_argument("--context", type=int, default=900)
    ap.add_argument("--rounds", type=int, default=30)
    args = ap.parse_args()
    runtime = load_runtime(args.model, device="cpu", dtype="float32")
    context = [10 + (i * 37) % (runtime.vocab_size - 10) for i in range(args.context)]
    cache = PromptCache(runtime, "full")
    cache.extend(context, last_only=True)
    ms = {(t, n): [] for t in THREADS for n in ROWS}
    for r in range(args.rounds):
        for t in THREADS if r % 2 else THREADS[::-1]:
            with runtime.threads.pinned(t):    # the runtime's thread choice held at t
                for n in ROWS:                 # a chain of n rows, as a verified draft
                    tokens, parents = [100 + i for i in range(n)], [-1] + list(range(n - 1))
                    t0 = time.perf_counter()
                    cache.extend_tree(tokens, parents)
                    ms[t, n].append((time.perf_counter() - t0) * 1000)
                    cache.truncate(len(context))
    print(f"model {runtime.path.name}, forward {cache.forward}, "
          f"{args.context} cached tokens, {args.rounds} rounds")
    for n in ROWS:
        one, two = statistics.median(ms[1, n]), statistics.median(ms[2, n])
        print(f"{n:>2} rows: 1 thread {one:.2f} ms, 2 threads {two:.2f} ms, "
              f"2 / 1 = {two / one:.2f}")


if __name__ == "__main__":
    main()
