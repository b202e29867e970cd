"""Wall time of one `inkling complete` call, Python imports and model load included.

    python benchmarks/cli_latency.py [FILE LINE COL] [--runs 5]

Prints each run's wall time and the median, beside the time Python takes just to
import torch and transformers' Llama (the floor no command can go under).
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def wall(cmd: list[str]) -> tuple[float, subprocess.CompletedProcess]:
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    return time.perf_counter() - t0, proc


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("where", nargs="*", default=[str(REPO.parent / "shared" / "samples" /
                                                     "inventory" / "store.py"), "24", "20"])
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    file, line, col = args.where
    imports = [wall([sys.executable, "-c", "import torch; from transformers.models.llama import "
                     "modeling_llama"])[0] for _ in range(args.runs)]
    runs = []
    for _ in range(args.runs):
        t, proc = wall([sys.executable, "-m", "inkling.cli.main", "complete", file, "--line", line,
                        "--col", col])
        if proc.returncode:
            print(proc.stderr)
            return 1
        runs.append(t)
        print(f"  {t:.2f} s  -> {proc.stdout.strip()!r}")
    print(f"inkling complete: median {statistics.median(runs):.2f} s over {args.runs} runs "
          f"(target < 5 s); importing torch + transformers alone: "
          f"median {statistics.median(imports):.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
