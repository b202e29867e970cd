"""The trace set the benchmarks replay: the sample traces (when ../shared is beside the
checkout) and retype traces of held-out standard-library files."""
from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

from inkling.lsp.retype_trace import RetypeError, RetypeOptions, retype_trace
from inkling.lsp.trace_file import Trace, read_trace
from inkling.models.corpus import load_corpus

REPO = Path(__file__).resolve().parents[1]
SHARED_TRACES = REPO.parent / "shared" / "traces"
TOOLZ = "toolz==1.0.0"          # held out of the bundled model's training (models/packages.py)
TOOLZ_MODULES = ("dicttoolz.py", "functoolz.py", "itertoolz.py", "recipes.py")


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


def toolz_builders(tmp: Path) -> tuple[list, str]:
    """Retype trace builders of toolz's modules (``inkling trace retype`` defaults: seed 0,
    8 functions a file, the four modules as the workspace), fetched with ``pip download``
    into ``tmp``; or ([], why not)."""
    try:
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--quiet",
                        TOOLZ, "-d", str(tmp)], check=True, capture_output=True, text=True,
                       timeout=300)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError) as exc:
        why = getattr(exc, "stderr", "") or str(exc)
        return [], f"pip download {TOOLZ} failed: {why.strip().splitlines()[-1:]}"
    wheel = next(tmp.glob("toolz-*.whl"), None)
    if wheel is None:
        return [], f"pip download {TOOLZ} gave no wheel"
    with zipfile.ZipFile(wheel) as z:
        workspace = {f"toolz/{m}": z.read(f"toolz/{m}").decode("utf-8") for m in TOOLZ_MODULES}
    out = []
    for path, text in workspace.items():
        try:
            out.append((path, retype_trace(path, text, workspace, RetypeOptions())))
        except RetypeError:
            continue
    return out, ""


def toolz_traces(tmp: Path) -> tuple[list[Trace], str]:
    """Retype traces of toolz's modules (see ``toolz_builders``), or ([], why not)."""
    builders, why = toolz_builders(tmp)
    return [b.trace(f"retype:{path}") for path, b in builders], why
