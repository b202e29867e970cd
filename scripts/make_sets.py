"""Build the evaluation sets' retype traces from their pinned wheels.

    python scripts/make_sets.py [--set reporting|tuning|both] [--out DIR]

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
from pathlib import Path

from inkling.evaluation.eval_sets import SETS, EvalSet, PinnedPackage, eval_set
from inkling.evaluation.packages import load_pinned
from inkling.evaluation.retype_trace import RetypeError, RetypeOptions, retype_trace
from inkling.evaluation.trace_builder import TraceBuilder
from inkling.models.corpus import load_corpus

SET_TRACES = Path(__file__).resolve().parents[1] / "benchmarks" / "traces"  # a folder a set


def stdlib_builders(min_lines: int = 0, max_functions: int = 4, limit: int = 0
                    ) -> list[tuple[str, TraceBuilder]]:
    """(path, retype trace builder) of held-out standard-library files with at least
    ``min_lines`` lines (seed 0, ``max_functions`` functions a file, no workspace)."""
    out = []
    for f in load_corpus().held_out:
        if f.text.count("\n") < min_lines:
            continue
        try:
            builder = retype_trace(f.relpath, f.text, {},
                                   RetypeOptions(seed=0, max_functions=max_functions))
        except RetypeError:
            continue
        out.append((f.relpath, builder))
        if limit and len(out) >= limit:
            break
    return out


def package_builders(package: PinnedPackage, cache: Path | None = None
                     ) -> list[tuple[str, TraceBuilder]]:
    """(wheel path, retype trace builder) of each module an evaluation set's package
    retypes (``traced``; ``inkling trace retype`` defaults: seed 0, 8 functions a file, those
    modules as the workspace), read from its pinned wheel (the wheel cache, or ``cache``)."""
    workspace = {f.relpath: f.text for f in load_pinned(package, cache, package.traced)}
    out = []
    for path, text in workspace.items():
        try:
            out.append((path, retype_trace(path, text, workspace, RetypeOptions())))
        except RetypeError:
            continue
    return out


def set_builders(eval_set: EvalSet, cache: Path | None = None
                 ) -> list[tuple[str, TraceBuilder]]:
    """(trace file name, builder) of every retype trace of an evaluation set: its held-out
    standard-library files' and its packages' modules'."""
    out = stdlib_builders() if eval_set.stdlib else []
    for package in eval_set.packages:
        out += package_builders(package, cache)
    return [(f"retype-{path.removesuffix('.py').replace('/', '-')}.jsonl", b) for path, b in out]


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
