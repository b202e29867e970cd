"""Build the evaluation sets' retype traces from their pinned wheels.

    python benchmarks/make_sets.py [--set reporting|tuning|both] [--out DIR]

The sets are ``evaluation/eval_sets.py``'s: the tuning set (the held-out standard-library
files and toolz 1.0.0, what the defaults were chosen on) and the reporting set (pinned
packages no default was chosen on). Each package's wheel comes from the wheel cache of
``evaluation/packages.py`` (``$INKLING_WHEEL_CACHE``, downloaded with ``pip download
--no-deps`` when it is not there); each module becomes one retype trace (seed 0, 8
functions, the package's other modules as the workspace; a standard-library file: 4
functions, no workspace). The output is the same, byte for byte, on every run: the
traces are written to ``DIR/<set>/`` (default ``benchmarks/traces/<set>/``), and the
folder's other ``retype-*.jsonl`` files are removed, so that it holds the set and nothing
else.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_traces import SET_TRACES, set_builders  # noqa: E402

from inkling.evaluation.eval_sets import SETS, eval_set  # noqa: E402


def write_set(name: str, out: Path) -> list[Path]:
    """Write the set's traces into ``out/name``; the paths written, in order."""
    folder = out / name
    folder.mkdir(parents=True, exist_ok=True)
    written = [b.write(folder / file) for file, b in set_builders(eval_set(name))]
    for stale in sorted(set(folder.glob("retype-*.jsonl")) - set(written)):
        stale.unlink()
        print(f"removed {stale} (not in the {name} set)")
    return written


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--set", default="both", choices=(*SETS, "both"),
                   help="the set to build (default both)")
    p.add_argument("--out", type=Path, default=SET_TRACES,
                   help="the folder of the sets' folders (default benchmarks/traces)")
    args = p.parse_args(argv)
    for name in SETS if args.set == "both" else [args.set]:
        written = write_set(name, args.out)
        size = sum(w.stat().st_size for w in written)
        print(f"{name}: {len(written)} traces, {size / 1e6:.2f} MB in {args.out / name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
