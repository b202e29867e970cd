"""Suggestions recorded before a change, checked after it (issue 22: the same suggestions,
token for token, in every decoder and drafting mode).

    python benchmarks/recorded_outputs.py record OUT.json [--limit N] [--set KEY=VALUE ...]
    python benchmarks/recorded_outputs.py check OUT.json [--set KEY=VALUE ...] [--json FIGURES]
    python benchmarks/recorded_outputs.py record|check OUT.json --quick   # one short trace

``record`` replays the sample traces (../shared/traces, when beside the checkout) and
retype traces of the held-out standard-library files under every decoder (greedy,
branches, superposed, sequential, beam) crossed with every drafting mode (none,
prompt-lookup, suffix), with the monitor on, three drafts a completion (one for greedy), no
idle refresh and the other options at their defaults (float32, the bundled model); then the
reporting set's traces (benchmarks/traces/reporting) with every option at its default; and
writes every completion's drafts. ``check`` replays the same and
prints each difference; it exits 1 if any. ``--set completion.alternative_min_tokens=0``
(an option's dotted name, its value as JSON or text) replays with that option changed: a
change of the defaults is checked against a recording made before it at the old value.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import held_out_traces, parser, quick_traces, sample_traces, write_json  # noqa: E402

from inkling.completion.engine import Engine  # noqa: E402
from inkling.completion.options import InklingOptions  # noqa: E402
from inkling.evaluation.replay import Replayer  # noqa: E402
from inkling.evaluation.trace_file import read_trace  # noqa: E402
from inkling.evaluation.syntax_check import SyntaxChecker  # noqa: E402

DECODERS = ("greedy", "branches", "superposed", "sequential", "beam")
REPORTING = Path(__file__).resolve().parent / "traces" / "reporting"
DRAFTING = ("none", "prompt-lookup", "suffix")


def _traces(limit: int, quick: bool):
    """The traces as the recording before issue 22 replayed them: without accept events
    (the format had none then; an accept feeds the history drafting source)."""
    traces = quick_traces() if quick else sample_traces() + held_out_traces(min_lines=150,
                                                                           limit=limit)
    return _without_accepts(traces)


def _without_accepts(traces):
    """... and named by file name, so a recording made in another checkout still matches."""
    return [dataclasses.replace(t, source=_name(t.source),
                                events=tuple(e for e in t.events
                                             if type(e).__name__ != "AcceptEvent"))
            for t in traces]


def _name(source: str) -> str:
    return source if source.startswith("retype:") else f"traces/{Path(source).name}"


def _fingerprint(traces) -> str:
    h = hashlib.sha256()
    for t in traces:
        h.update(t.source.encode())
        h.update(str(len(t.events)).encode())
    return h.hexdigest()[:16]


def overrides(pairs: list[str]) -> dict:
    """['completion.alternative_min_tokens=0', ...] -> the options tree they set."""
    tree: dict = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or "." not in key:
            raise SystemExit(f"recorded_outputs.py: --set {pair!r}: expected SECTION.NAME=VALUE")
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError:
            parsed = value
        section, name = key.split(".", 1)
        tree.setdefault(section, {})[name] = parsed
    return tree


def replay_all(limit: int, extra: dict | None = None, quick: bool = False,
               model: str = "") -> dict:
    """Every combination's completions; under ``quick`` one short trace, two combinations
    and no reporting set."""
    traces = _traces(limit, quick)
    runtime = Engine(InklingOptions().merged({"model": {"path": model}})).load_model()
    checker = SyntaxChecker()
    out = {"traces": [t.source for t in traces], "fingerprint": _fingerprint(traces),
           "runs": {}}
    datastores: dict = {}
    combos = [("greedy", "none"), ("branches", "suffix")] if quick else \
        [(decoder, draft) for decoder in DECODERS for draft in DRAFTING]
    for decoder, draft in combos:
        # every completion asks for the invoked number of drafts (3): with one draft
        # (an automatic completion's default) every decoder decodes greedily
        # and no idle refresh (the replay before issue 22 never ran the idle policy)
        options = InklingOptions().merged({"completion": {
            "decoder": decoder, "draft": draft,
            "automatic_drafts": 1 if decoder == "greedy" else 3},
            "cache": {"idle_refresh_ms": 0}}).merged(extra or {})
        out["runs"][f"{decoder}/{draft}"] = _replay(options, runtime, checker, datastores,
                                                    traces, f"{decoder:10} {draft:13}")
    if quick:
        return out
    # the defaults as a person gets them, on the reporting set
    reporting = [dataclasses.replace(read_trace(p), source=f"reporting/{p.name}")
                 for p in sorted(REPORTING.glob("*.jsonl"))]
    out["traces"] += [t.source for t in reporting]
    out["fingerprint"] = _fingerprint(traces + reporting)
    out["runs"]["defaults/reporting"] = _replay(InklingOptions().merged(extra or {}), runtime,
                                                checker, datastores, reporting,
                                                f"{'defaults':10} {'reporting':13}")
    return out


def _replay(options, runtime, checker, datastores: dict, traces, label: str) -> dict:
    """Each trace's completions as [line, drafts], replayed under ``options`` (the datastore
    they name built once, kept in ``datastores``)."""
    engine = Engine(options, runtime)
    spec = options.completion.datastore
    if engine.uses_datastore and spec not in datastores:
        datastores[spec] = engine.build_datastore()
    replayer = Replayer(options, runtime, checker,
                        datastores.get(spec) if engine.uses_datastore else None)
    t0 = time.perf_counter()
    run = {t.source: [[r.line, list(r.drafts)] for r in replayer.replay(t).completions]
           for t in traces}
    n = sum(len(v) for v in run.values())
    print(f"{label} {n:5} completions  {time.perf_counter() - t0:6.1f} s", flush=True)
    return run


def check(recorded: dict, now: dict) -> list[str]:
    diffs = []
    if recorded["fingerprint"] != now["fingerprint"]:
        diffs.append(f"the trace set differs: {recorded['traces']} then, {now['traces']} now")
        return diffs
    for combo, runs in recorded["runs"].items():
        for trace, completions in runs.items():
            later = now["runs"].get(combo, {}).get(trace)
            if later is None:
                diffs.append(f"{combo} {trace}: not replayed now")
                continue
            for (line, drafts), (line2, drafts2) in zip(completions, later):
                if line != line2 or drafts != drafts2:
                    diffs.append(f"{combo} {trace}:{line}: {drafts!r} then, {drafts2!r} now")
            if len(completions) != len(later):
                diffs.append(f"{combo} {trace}: {len(completions)} completions then, "
                             f"{len(later)} now")
    return diffs


def main() -> int:
    ap = parser(__doc__)
    ap.add_argument("action", choices=("record", "check"))
    ap.add_argument("file")
    ap.add_argument("--limit", type=int, default=3, help="held-out retype traces (default 3)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="an option changed for every replay (e.g. "
                         "completion.alternative_min_tokens=0)")
    args = ap.parse_args()
    extra = overrides(args.set)
    if args.action == "record":
        Path(args.file).write_text(json.dumps(replay_all(args.limit, extra, args.quick,
                                                          args.model)), encoding="utf-8")
        print(f"recorded in {args.file}")
        return 0
    path = Path(args.file)
    recorded = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
    held_out = [t for t in recorded["traces"] if t.startswith("retype:")] if recorded else []
    now = replay_all(len(held_out), extra, args.quick, args.model)
    if args.quick and (recorded or {}).get("fingerprint") != now["fingerprint"]:
        # no recording of the quick set to check against: make one, then check a replay
        print(f"no quick recording in {path}: recorded now, then checked")
        recorded, now = now, replay_all(0, extra, True, args.model)
    diffs = check(recorded, now)
    total = sum(len(c) for r in recorded["runs"].values() for c in r.values())
    for d in diffs[:50]:
        print(d)
    print(f"{total} completions recorded, {len(diffs)} differ")
    write_json(args.json, {"completions": total, "differ": len(diffs)})
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
