"""`inkling replay`'s run: traces read, replayed under every combination of options (in
process, through `inkling serve` with --via-lsp, or on Ray with --ray), the JSON written,
the HTML report rendered. Imported by the command when it runs (cli/replay.py)."""
from __future__ import annotations

import dataclasses
import gc
import json
import sys
from pathlib import Path

from tqdm import tqdm

from inkling.completion.drafting.acceptance import AcceptanceMeter
from inkling.completion.drafting.draft_mode import choice_for, resolved
from inkling.completion.engine import Engine
from inkling.completion.errors import OptionError
from inkling.completion.model_report import model_description

from inkling.cli.flags import load_progress, ray_options
from inkling.evaluation.comparison import ablations, combinations, table
from inkling.evaluation.ray_replay import replay_on_ray
from inkling.evaluation.replay import LspReplayer, Replayer, replay_together
from inkling.evaluation.replay_result import (ReplayFailure, TraceResult, comparison_json,
                                              replay_json, runtime_config)
from inkling.evaluation.report import PLOTS_MISSING, plots_available, render_report
from inkling.evaluation.syntax_check import SyntaxChecker
from inkling.evaluation.trace_file import TraceError, read_trace


def _read_traces(paths: list[str]):
    """(parsed traces, results of traces that failed to parse)."""
    traces, failed = [], []
    for path in paths:
        try:
            traces.append(read_trace(path))
        except TraceError as exc:
            failed.append(TraceResult(path, "", failures=[
                ReplayFailure(exc.trace, exc.line, exc.message)]))
    return traces, failed


def _config(options, runtime: dict | None) -> dict:
    config = dataclasses.asdict(options)
    if runtime is not None:
        config["runtime"] = runtime
    return config


def _replayers(combos, via_lsp: bool):
    """One replayer per combination: the model loaded once per model setting, the
    datastore built once per datastore setting (or one `inkling serve` per combination)."""
    checker = SyntaxChecker()
    if via_lsp:
        return None, [LspReplayer(c.options, checker) for c in combos]
    runtimes, datastores, replayers, said = {}, {}, [], set()
    for c in combos:
        model = (c.options.model.path, c.options.model.device, c.options.model.dtype)
        if model not in runtimes:
            runtimes[model] = Engine(c.options).load_model(load_progress())
        engine = Engine(c.options, runtimes[model])
        spec = c.options.completion.datastore
        if engine.uses_datastore and spec not in datastores:
            datastores[spec] = engine.build_datastore(load_progress())
        if model not in said:           # loaded now: say what it chose, drafting timed as
            said.add(model)             # the trace's preparation would time it
            resolved(c.options, runtimes[model], AcceptanceMeter.prior, measure=True)
            print(model_description(c.options, runtimes[model], AcceptanceMeter.prior).line(),
                  file=sys.stderr)
        replayers.append(Replayer(c.options, runtimes[model], checker,
                                  datastores.get(spec) if engine.uses_datastore else None))
    return next(iter(runtimes.values())), replayers


def replay_all(combos, traces, progress_file, via_lsp: bool = False):
    """Replay every trace under every combination, interleaved by event (``replay_together``);
    returns the runtime block and one result list per combination."""
    runtime, replayers = _replayers(combos, via_lsp)
    gc.freeze()               # the model and the datastores, as the server does once ready
    results: list[list] = [[] for _ in combos]
    try:
        total = sum(len(t.events) for t in traces) * len(combos)
        with tqdm(total=total, desc="replaying", unit="event", file=progress_file,
                  disable=None) as bar:
            for trace in traces:
                bar.set_postfix_str(trace.name[:40])
                for i, result in enumerate(replay_together(replayers, trace, bar.update)):
                    results[i].append(result)
    finally:
        if via_lsp:
            for replayer in replayers:
                replayer.close()
    block = None if runtime is None else {**runtime_config(runtime),
                                          "drafting": _drafting(runtime, combos[0].options)}
    return block, results


def _drafting(runtime, options) -> dict:
    """What ``completion.draft auto`` chose on this load and why (measured now where no
    combination asked for auto): config.runtime.drafting."""
    return choice_for(runtime, options.model.forward, AcceptanceMeter.prior).report()


def _replay_on_ray(args, combos, traces):
    """(runtime block, results per combination, ray config, interrupted) of a replay
    sharded over Ray: every trace x combination pair is a task."""
    if args.via_lsp:
        raise OptionError("--ray and --via-lsp cannot be combined (each actor replays "
                          "in process)")
    run = replay_on_ray([c.options for c in combos], traces, ray_options(args), sys.stderr)
    results = [[r for r in per_combo if r is not None] for per_combo in run.results]
    return run.runtime, results, run.config, run.interrupted


def _write_json(report: dict, target: str) -> None:
    text = json.dumps(report, indent=2, ensure_ascii=False) + "\n"
    if target == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
    else:
        Path(target).write_text(text, encoding="utf-8")


def replay(args, options) -> int:
    """`inkling replay` under ``options`` (the flags': cli/replay.py)."""
    if args.report and not plots_available():
        print(f"inkling: note: {PLOTS_MISSING}", file=sys.stderr)
    if args.compare and args.ablate:
        raise OptionError("--compare and --ablate cannot be combined: --compare replays "
                          "every combination, --ablate each change alone")
    combos = ablations(args.ablate, options) if args.ablate else \
        combinations(args.compare or [], options)           # bad keys fail before any work
    compared = args.compare or args.ablate
    traces, failed = _read_traces(args.traces)
    ray_config, interrupted = None, False
    if args.ray and traces:
        runtime, runs, ray_config, interrupted = _replay_on_ray(args, combos, traces)
    elif traces:
        runtime, runs = replay_all(combos, traces, sys.stderr, args.via_lsp)
    else:
        runtime, runs = None, [[] for _ in combos]
    order = {path: i for i, path in enumerate(args.traces)}
    runs = [sorted(results + failed, key=lambda t: order.get(t.source, len(order)))
            for results in runs]
    config = _config(options, runtime)
    config["via_lsp"] = bool(args.via_lsp)
    if ray_config is not None:
        config["ray"] = ray_config
    if compared:
        config["compare" if args.compare else "ablate"] = list(compared)
    report = replay_json(runs[0], config)
    if compared:
        report["runs"] = comparison_json(combos, runs)
        print(table(report["runs"]), file=sys.stderr)       # the headline figures
    if args.json:
        _write_json(report, args.json)
    if args.report:
        Path(args.report).write_text(render_report(runs[0], report, runs), encoding="utf-8")
    errors = [e for run in report.get("runs", [report]) for e in run["errors"]]
    for error in dict.fromkeys(errors):
        print(f"inkling: {error}", file=sys.stderr)
    if interrupted:
        print(f"inkling: interrupted; the report holds the {len(runs[0])} trace(s) that "
              "finished", file=sys.stderr)
        return 130
    return 1 if errors else 0
