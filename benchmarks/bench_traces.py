"""The trace sets the benchmarks replay: the sample traces (when ../shared is beside the
checkout), retype traces of the tuning set (held-out standard-library files, toolz 1.0.0)
and the reporting set's committed retype traces (``benchmarks/traces/reporting``, built
by ``make_sets.py`` from the pinned wheels of ``evaluation/eval_sets.py``)."""
from __future__ import annotations

import subprocess
from pathlib import Path

from inkling.evaluation.retype_trace import RetypeError, RetypeOptions, retype_trace
from inkling.evaluation.trace_builder import TraceBuilder
from inkling.evaluation.trace_file import Trace, read_trace
from inkling.models.corpus import load_corpus
from inkling.evaluation.eval_sets import TOOLZ as TOOLZ_PIN, EvalSet, PinnedPackage
from inkling.evaluation.packages import load_pinned

REPO = Path(__file__).resolve().parents[1]
SHARED_TRACES = REPO.parent / "shared" / "traces"
SET_TRACES = REPO / "benchmarks" / "traces"      # a folder of each set's traces
TOOLZ = TOOLZ_PIN.pin           # held out of the bundled model's training (evaluation/packages.py)


def sample_traces() -> list[Trace]:
    if not SHARED_TRACES.is_dir():
        print(f"(no sample traces: {SHARED_TRACES} is missing)")
        return []
    return [read_trace(p) for p in sorted(SHARED_TRACES.glob("*.jsonl"))]


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


def held_out_traces(min_lines: int = 0, max_functions: int = 4, limit: int = 0) -> list[Trace]:
    """Retype traces of held-out standard-library files (see ``stdlib_builders``)."""
    return [b.trace(f"retype:{path}")
            for path, b in stdlib_builders(min_lines, max_functions, limit)]


def describe(traces: list[Trace]) -> str:
    from inkling.evaluation.trace_file import CompleteEvent
    n = sum(isinstance(e, CompleteEvent) for t in traces for e in t.events)
    return f"{len(traces)} traces, {n} completions"


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
    standard-library files' (as ``held_out_traces``) and its packages' modules'."""
    out = stdlib_builders() if eval_set.stdlib else []
    for package in eval_set.packages:
        out += package_builders(package, cache)
    return [(f"retype-{path.removesuffix('.py').replace('/', '-')}.jsonl", b) for path, b in out]


def set_paths(name: str) -> list[str]:
    """The paths of an evaluation set's committed traces (``make_sets.py`` writes them)."""
    folder = SET_TRACES / name
    paths = sorted(str(p) for p in folder.glob("*.jsonl"))
    if not paths:
        raise FileNotFoundError(f"no traces in {folder}: python benchmarks/make_sets.py "
                                f"--set {name} builds them")
    return paths


def set_traces(name: str) -> list[Trace]:
    """The committed traces of an evaluation set."""
    return [read_trace(p) for p in set_paths(name)]


def toolz_builders(tmp: Path) -> tuple[list, str]:
    """Retype trace builders of toolz's modules (see ``package_builders``), its wheel
    fetched with ``pip download`` into ``tmp``; or ([], why not)."""
    try:
        return package_builders(TOOLZ_PIN, tmp), ""
    except (subprocess.CalledProcessError, FileNotFoundError, OSError) as exc:
        return [], f"pip download {TOOLZ} failed: {str(exc).strip().splitlines()[-1:]}"


def toolz_traces(tmp: Path) -> tuple[list[Trace], str]:
    """Retype traces of toolz's modules (see ``toolz_builders``), or ([], why not)."""
    builders, why = toolz_builders(tmp)
    return [b.trace(f"retype:{path}") for path, b in builders], why
