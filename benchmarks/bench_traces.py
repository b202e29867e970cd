"""The trace set the benchmarks replay: the sample traces (when ../shared is beside the
checkout) and retype traces of held-out standard-library files."""
from __future__ import annotations

from pathlib import Path

from inkling.lsp.retype_trace import RetypeError, RetypeOptions, retype_trace
from inkling.lsp.trace_file import Trace, read_trace
from inkling.models.corpus import load_corpus

REPO = Path(__file__).resolve().parents[1]
SHARED_TRACES = REPO.parent / "shared" / "traces"


def sample_traces() -> list[Trace]:
    if not SHARED_TRACES.is_dir():
        print(f"(no sample traces: {SHARED_TRACES} is missing)")
        return []
    return [read_trace(p) for p in sorted(SHARED_TRACES.glob("*.jsonl"))]


def held_out_traces(min_lines: int = 0, max_functions: int = 4, limit: int = 0) -> list[Trace]:
    """Retype traces of held-out standard-library files with at least ``min_lines`` lines."""
    out = []
    for f in load_corpus().held_out:
        if f.text.count("\n") < min_lines:
            continue
        try:
            builder = retype_trace(f.relpath, f.text, {},
                                   RetypeOptions(seed=0, max_functions=max_functions))
        except RetypeError:
            continue
        out.append(builder.trace(f"retype:{f.relpath}"))
        if limit and len(out) >= limit:
            break
    return out


def describe(traces: list[Trace]) -> str:
    from inkling.lsp.trace_file import CompleteEvent
    n = sum(isinstance(e, CompleteEvent) for t in traces for e in t.events)
    return f"{len(traces)} traces, {n} completions"
