"""The native forward's CPU flags: compile time against one-row step time.

    python benchmarks/native_flags.py ["--flags=-mavx2 -mfma -mf16c" "--flags=-march=native"]
                                      [--context 600] [--rounds 7] [--reps 50]

Each flag set is compiled by inkling's own build (runtime/native_build.py) into a fresh
folder: wall seconds and the compiler's CPU seconds (user + system of its processes) and
its peak memory. Then one-row steps of the bundled model after ``--context`` cached tokens
on each module, on one thread, rounds alternating between the modules: ms p50 of wall
time and of this thread's CPU time (the CPU time is what a step costs; the wall time also
holds the waits for a core on a shared machine).
"""
from __future__ import annotations

import argparse
import os
import platform
import resource
import statistics
import tempfile
import time
from pathlib import Path

import torch

from inkling.runtime import native_build
from inkling.runtime.model_loader import load_runtime
from inkling.runtime.native_llama import NativeLlama
from inkling.cache.prompt_cache import PromptCache
from inkling.models import BUNDLED_MODEL_DIR
from inkling.models.corpus import stdlib_root

DEFAULT_FLAGS = ("-mavx2 -mfma -mf16c", "-march=native")


def compile_once(flags: tuple[str, ...], root: Path) -> tuple[object, str]:
    """(the loaded module, 'wall s, cpu s, peak MB') of a fresh build with ``flags``."""
    os.environ[native_build.CACHE_ENV] = str(root)
    p = native_build.plan(flags=flags)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    native_build.build(p)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    # ru_maxrss of children: the largest child so far (KB on Linux)
    return native_build.load_module(p.module), \
        f"compile wall {wall:6.1f} s, cpu {cpu:6.1f} s, peak {after.ru_maxrss / 1024:6.0f} MB"


def step_ms(cache: PromptCache, context: int, reps: int) -> tuple[float, float]:
    """(wall ms, CPU ms) p50 of ``reps`` one-row steps after ``context`` cached tokens."""
    wall, cpu = [], []
    for i in range(reps):
        w, c = time.perf_counter(), time.thread_time()
        cache.extend([100 + i % 50])
        wall.append((time.perf_counter() - w) * 1000)
        cpu.append((time.thread_time() - c) * 1000)
        cache.truncate(context)
    return statistics.median(wall), statistics.median(cpu)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--flags", action="append", help="a flag set, quoted (repeatable)")
    ap.add_argument("--context", type=int, default=600)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--reps", type=int, default=50)
    args = ap.parse_args()
    sets = [tuple(f.split()) for f in (args.flags or DEFAULT_FLAGS)]
    print(f"cpu {_cpu_model()}, {platform.machine()}, torch {torch.__version__}, "
          f"features chosen at run time: {' '.join(native_build.plan().flags) or 'none'}")
    modules = {}
    with tempfile.TemporaryDirectory() as tmp:
        for i, flags in enumerate(sets):
            modules[flags], said = compile_once(flags, Path(tmp) / str(i))
            print(f"{' '.join(flags):<24} {said}", flush=True)
    runtime = load_runtime(BUNDLED_MODEL_DIR, device="cpu", dtype="float32",
                           forward="compact", threads=1)
    ids = runtime.encode((stdlib_root() / "textwrap.py").read_text())[:args.context]
    natives = {flags: NativeLlama(runtime.model, extension=m) for flags, m in modules.items()}
    caches = {}
    for flags in sets:                  # the runtime runs the native forward it holds now
        runtime.forwards.native = natives[flags]
        caches[flags] = PromptCache(runtime, "full", forward="native")
        caches[flags].extend(ids, last_only=True)
    times = {flags: ([], []) for flags in sets}
    for r in range(args.rounds):
        for flags in sets if r % 2 else sets[::-1]:
            runtime.forwards.native = natives[flags]
            wall, cpu = step_ms(caches[flags], len(ids), args.reps)
            times[flags][0].append(wall)
            times[flags][1].append(cpu)
    print(f"\none-row step after {len(ids)} cached tokens, 1 thread, ms p50 of {args.rounds} "
          f"alternating rounds of {args.reps}")
    for flags in sets:
        print(f"{' '.join(flags):<24} wall {statistics.median(times[flags][0]):5.2f}  cpu "
              f"{statistics.median(times[flags][1]):5.2f}  float16 panels {natives[flags].half}")


def _cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.partition(":")[2].strip()
    return platform.processor() or "?"


if __name__ == "__main__":
    main()
