"""What the benchmarks share: their command line (``--model``, ``--quick``, ``--json``), the
trace sets they replay, the interleaved replay of one trace under several option sets, and
the flat JSON of headline figures each writes.

The traces: the sample traces (when ../shared is beside the checkout), retype traces of the
tuning set (held-out standard-library files, toolz 1.0.0) and the evaluation sets' committed
retype traces (``benchmarks/traces/<set>``, built by ``scripts/make_sets.py``). ``--quick``
replays one short held-out trace (a few completions) so that every script runs in about a
minute; its figures only show that the script works."""
from __future__ import annotations

import argparse
import dataclasses
import json
import subprocess
import sys
from pathlib import Path

from inkling.completion.engine import Engine
from inkling.completion.options import InklingOptions
from inkling.evaluation.eval_sets import TOOLZ as TOOLZ_PIN
from inkling.evaluation.replay import Replayer, replay_together
from inkling.evaluation.syntax_check import SyntaxChecker
from inkling.evaluation.trace_file import CompleteEvent, Trace, read_trace

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))

from make_sets import SET_TRACES, package_builders, stdlib_builders  # noqa: E402

SHARED_TRACES = REPO.parent / "shared" / "traces"
TOOLZ = TOOLZ_PIN.pin           # held out of the bundled model's training (evaluation/packages.py)
QUICK_COMPLETIONS = 3           # completions a trace keeps under --quick


def parser(description: str, model: bool = True) -> argparse.ArgumentParser:
    """An argument parser with the options every benchmark takes (``--model`` where the
    script runs one model of the user's choice)."""
    ap = argparse.ArgumentParser(description=description.split("\n")[0])
    if model:
        ap.add_argument("--model", default="", help="model folder (default: the bundled model)")
    ap.add_argument("--quick", action="store_true",
                    help="one short trace, one round: checks the script runs, in about a minute")
    ap.add_argument("--json", type=Path, help="write the headline figures here (name -> number)")
    return ap


def native_layers_built() -> str | None:
    """Build the native layers now where they are not built (or wait for the build that
    runs), so that a run measures what every start after the first runs, not a first start
    serving the compact forward beside the compiler; why they cannot be, else None."""
    from inkling.runtime.native_llama import NativeUnavailable, load_extension
    try:
        load_extension(wait=True)
    except NativeUnavailable as exc:
        return str(exc)
    return None


def write_json(path: Path | None, figures: dict) -> None:
    """Write ``figures`` flattened (nested keys joined with '.'), numbers only, to ``path``."""
    if path:
        Path(path).write_text(json.dumps(flat(figures), indent=1, sort_keys=True) + "\n")


def flat(figures: dict, prefix: str = "") -> dict[str, float]:
    """The numbers of a nested dict, under dotted names (booleans as 0 / 1)."""
    out: dict[str, float] = {}
    for key, value in figures.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(flat(value, name + "."))
        elif isinstance(value, (bool, int, float)):
            out[name] = float(value) if isinstance(value, bool) else value
    return out


def options(args, **sections) -> InklingOptions:
    """The default options with ``--model`` and the sections given merged in."""
    return InklingOptions().merged({"model": {"path": args.model}, **sections})


def load(opts: InklingOptions):
    """(the Engine, its loaded runtime) for ``opts``."""
    engine = Engine(opts)
    return engine, engine.load_model()


def shorten(trace: Trace, completions: int = QUICK_COMPLETIONS) -> Trace:
    """``trace`` up to its ``completions``-th completion."""
    seen = 0
    for n, event in enumerate(trace.events):
        seen += isinstance(event, CompleteEvent)
        if seen == completions:
            return dataclasses.replace(trace, events=trace.events[:n + 1])
    return trace


def quick_traces() -> list[Trace]:
    """One short held-out retype trace: what ``--quick`` replays."""
    return [shorten(t) for t in held_out_traces(0, 2, limit=1)]


def bench_traces(args, min_lines: int = 0, max_functions: int = 4) -> list[Trace]:
    """The sample traces and the held-out retype traces (``quick_traces`` under ``--quick``)."""
    if args.quick:
        return quick_traces()
    return sample_traces() + held_out_traces(min_lines, max_functions)


def replay_each(named: dict[str, InklingOptions], traces: list[Trace], runtime,
                datastore=None) -> dict[str, list]:
    """{name: its TraceResults}: every trace replayed under each named option set,
    interleaved event by event (``replay_together``), on one runtime."""
    checker = SyntaxChecker()
    results: dict[str, list] = {name: [] for name in named}
    for i, trace in enumerate(traces):
        replayers = [Replayer(o, runtime, checker, datastore) for o in named.values()]
        for name, result in zip(named, replay_together(replayers, trace)):
            results[name].append(result)
        print(f"  [{i + 1}/{len(traces)}] {trace.name}", file=sys.stderr)
    return results


def sample_traces() -> list[Trace]:
    if not SHARED_TRACES.is_dir():
        print(f"(no sample traces: {SHARED_TRACES} is missing)")
        return []
    return [read_trace(p) for p in sorted(SHARED_TRACES.glob("*.jsonl"))]


def held_out_traces(min_lines: int = 0, max_functions: int = 4, limit: int = 0) -> list[Trace]:
    """Retype traces of held-out standard-library files (``make_sets.stdlib_builders``)."""
    return [b.trace(f"retype:{path}")
            for path, b in stdlib_builders(min_lines, max_functions, limit)]


def describe(traces: list[Trace]) -> str:
    n = sum(isinstance(e, CompleteEvent) for t in traces for e in t.events)
    return f"{len(traces)} traces, {n} completions"


def set_paths(name: str) -> list[str]:
    """The paths of an evaluation set's committed traces (``make_sets.py`` writes them)."""
    folder = SET_TRACES / name
    paths = sorted(str(p) for p in folder.glob("*.jsonl"))
    if not paths:
        raise FileNotFoundError(f"no traces in {folder}: python scripts/make_sets.py "
                                f"--set {name} builds them")
    return paths


def set_traces(name: str) -> list[Trace]:
    """The committed traces of an evaluation set."""
    return [read_trace(p) for p in set_paths(name)]


def toolz_builders(tmp: Path) -> tuple[list, str]:
    """Retype trace builders of toolz's modules (``make_sets.package_builders``), its wheel
    fetched with ``pip download`` into ``tmp``; or ([], why not)."""
    try:
        return package_builders(TOOLZ_PIN, tmp), ""
    except (subprocess.CalledProcessError, FileNotFoundError, OSError) as exc:
        return [], f"pip download {TOOLZ} failed: {str(exc).strip().splitlines()[-1:]}"


def toolz_traces(tmp: Path) -> tuple[list[Trace], str]:
    """Retype traces of toolz's modules (see ``toolz_builders``), or ([], why not)."""
    builders, why = toolz_builders(tmp)
    return [b.trace(f"retype:{path}") for path, b in builders], why
