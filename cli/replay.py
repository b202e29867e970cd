"""`inkling replay` and `inkling trace`: the command-line side of edit traces.

The replay's Engine is imported by the commands that load a model (torch: its cost is
in cli.py), and the replay's results and checks by the replay (they import
inkling.analysis: 80 ms more for `inkling --help`, measured with -X importtime); the
trace commands and `inkling --help` need neither.
"""
from __future__ import annotations

import dataclasses
import gc
import json
import os
import sys
from pathlib import Path

from tqdm import tqdm

from inkling.completion.errors import OptionError
from inkling.completion.options import (CACHE_MODES, DECODERS, DRAFT_MODES, MONITOR_MODES,
                                        InklingOptions)

from inkling.cli.flags import (add_model_flags, add_ray_flags, load_progress, model_changes, positive,
                        ray_options)
from inkling.evaluation.comparison import ablations, combinations, table
from inkling.evaluation.git_repo import GitRepo
from inkling.evaluation.git_trace import GitTraceOptions, GitTracer
from inkling.evaluation.retype_trace import RetypeError, RetypeOptions, retype_trace
from inkling.evaluation.trace_file import TraceError, read_trace


def _add_replay(sub) -> None:
    p = sub.add_parser(
        "replay", help="replay edit traces through the engine and report metrics",
        description="Replay JSON Lines edit traces (format: docs/evaluation.md) headless "
        "through the same engine the language server drives; verify every check and report "
        "metrics.")
    p.add_argument("traces", nargs="+", metavar="TRACE")
    add_model_flags(p)
    d = InklingOptions()                   # flags not given: the options tree decides
    p.add_argument("--cache", default=None, choices=CACHE_MODES,
                   help=f"KV cache mode (default: the options' default, {d.cache.mode})")
    p.add_argument("--draft", default=None, choices=DRAFT_MODES,
                   help=f"drafting mode (default: {d.completion.draft})")
    p.add_argument("--datastore", metavar="SPEC", help="fixed code the suffix drafter also "
                   "searches: none, corpus (the bundled model's training files; the default) or "
                   "a folder")
    p.add_argument("--monitor", default=None, choices=MONITOR_MODES,
                   help=f"monitor-guided decoding (default: {d.completion.monitor})")
    p.add_argument("--decoder", default=None, choices=DECODERS,
                   help=f"how k > 1 drafts are decoded (default: {d.completion.decoder})")
    p.add_argument("--drafts", type=positive, default=None, metavar="K",
                   help="drafts per completion, invoked and automatic alike (default: the "
                   f"options', {d.completion.drafts} invoked and {d.completion.automatic_drafts} "
                   "automatic)")
    p.add_argument("--max-new-tokens", type=positive, metavar="N",
                   help="token budget of a line completion")
    p.add_argument("--json", metavar="OUT", help="write the metrics as JSON ('-': standard "
                   "output)")
    p.add_argument("--report", metavar="OUT.html", help="write an HTML report with plots")
    p.add_argument("--via-lsp", action="store_true",
                   help="replay through `inkling serve` over stdio with a real LSP client")
    p.add_argument("--compare", action="append", metavar="KEY=V1,V2",
                   help="replay every combination of these option values (repeatable; keys "
                   "are the options tree's, e.g. completion.draft=none,suffix or "
                   "cache.mode=full,pie), interleaved trace by trace; the JSON gets a "
                   "'runs' list and the report a side-by-side comparison")
    p.add_argument("--ablate", action="append", metavar="KEY=V",
                   help="replay the options as given and then with each of these changes "
                   "alone (repeatable; e.g. --ablate completion.monitor=off --ablate "
                   "completion.draft=none: what each mechanism buys), interleaved as "
                   "--compare is, with the same 'runs' list and comparison")
    add_ray_flags(p, "the replay (every trace, or trace x combination, a task)")
    p.set_defaults(func=_cmd_replay)


def _add_trace(sub) -> None:
    p = sub.add_parser("trace", help="make edit traces from files or a git history",
                       description="Write edit traces (JSON Lines) for `inkling replay`.")
    kinds = p.add_subparsers(dest="trace_kind", metavar="KIND", required=True)
    r = kinds.add_parser("retype", help="function bodies removed, then typed back line by line",
                         description="One trace per FILE: its function bodies are removed, then "
                         "typed back line by line with a completion before each line and edits "
                         "elsewhere in between. The other FILEs are the workspace.")
    r.add_argument("files", nargs="+", metavar="FILE", help="the files to retype")
    r.add_argument("--out", required=True, metavar="DIR",
                   help="folder the traces are written to (one .jsonl per FILE)")
    r.add_argument("--seed", type=int, default=0,
                   help="seed of the random choices: functions, edits, typing pauses "
                   "(default 0; the same seed gives the same traces)")
    r.add_argument("--max-functions", type=int, default=8, metavar="N",
                   help="functions retyped per file, picked at random (0: all; default 8)")
    r.add_argument("--no-mid-line", dest="mid_line", action="store_false",
                   help="ask for completions only at line starts, not also just after "
                   "triggers such as `obj.` and `import ` inside a line")
    r.add_argument("--no-accept", dest="accept", action="store_false",
                   help="write no `accept` event after each completion (by default the replay "
                   "takes the first draft when its first line is the one typed next)")
    r.add_argument("--workspace", action="extend", nargs="+", default=[], metavar="FILE",
                   help="more files of the workspace, not retyped (a `file` event in every "
                   "trace), e.g. the rest of a package")
    r.add_argument("--root", metavar="DIR", help="paths in the traces are relative to DIR "
                   "(default: the deepest folder holding every file), e.g. the folder above a "
                   "package, so that its absolute imports resolve")
    r.set_defaults(func=_cmd_trace_retype)
    g = kinds.add_parser("git", help="a git history, commit by commit, hunk by hunk",
                         description="One trace per commit after REV (first parents): each "
                         "changed file is opened as at the parent, the diff applied hunk by hunk "
                         "with a completion at the start of every added line, then checked.")
    g.add_argument("repo", metavar="REPO", help="a git repository's folder")
    g.add_argument("--since", required=True, metavar="REV",
                   help="the commit (or any revision git knows) after which to replay")
    g.add_argument("--out", required=True, metavar="DIR",
                   help="folder the traces are written to (one .jsonl per commit)")
    g.add_argument("--ext", action="append", metavar=".EXT",
                   help="file extensions to replay (repeatable; default .py)")
    g.add_argument("--max-commits", type=int, default=0, metavar="N", help="0: all")
    g.add_argument("--context-files", type=int, default=8, metavar="N",
                   help="unchanged files written into the workspace per trace (default 8)")
    g.add_argument("--seed", type=int, default=0,
                   help="seed of the random choices: context files, typing pauses (default 0)")
    g.add_argument("--no-accept", dest="accept", action="store_false",
                   help="write no `accept` event after each completion")
    g.set_defaults(func=_cmd_trace_git)


def add_commands(sub) -> None:
    """Register `replay` and `trace` on the `inkling` command's subparsers."""
    _add_replay(sub)
    _add_trace(sub)


# ----------------------------------------------------------------------- replay
def replay_options(args):
    """The InklingOptions the flags ask for; a flag not given keeps the options tree's
    default."""
    completion = {key: value for key, value in (
        ("decoder", args.decoder), ("draft", args.draft), ("monitor", args.monitor),
        ("drafts", args.drafts), ("automatic_drafts", args.drafts)) if value is not None}
    if args.max_new_tokens:
        completion["max_new_tokens"] = args.max_new_tokens
    if args.datastore:
        completion["datastore"] = args.datastore
    return InklingOptions().merged({
        "model": model_changes(args), "completion": completion,
        "cache": {"mode": args.cache} if args.cache else {}})


def _read_traces(paths: list[str]):
    """(parsed traces, results of traces that failed to parse)."""
    from inkling.evaluation.replay_result import ReplayFailure, TraceResult      # inkling.analysis: see the top
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
    from inkling.completion.engine import Engine        # torch (cli.py says what it costs)

    from inkling.evaluation.replay import LspReplayer, Replayer           # the Engine too
    from inkling.evaluation.syntax_check import SyntaxChecker             # inkling.analysis: see the top
    checker = SyntaxChecker()
    if via_lsp:
        return None, [LspReplayer(c.options, checker) for c in combos]
    runtimes, datastores, replayers = {}, {}, []
    for c in combos:
        model = (c.options.model.path, c.options.model.device, c.options.model.dtype)
        if model not in runtimes:
            runtimes[model] = Engine(c.options).load_model(load_progress())
        engine = Engine(c.options, runtimes[model])
        spec = c.options.completion.datastore
        if engine.uses_datastore and spec not in datastores:
            datastores[spec] = engine.build_datastore(load_progress())
        replayers.append(Replayer(c.options, runtimes[model], checker,
                                  datastores.get(spec) if engine.uses_datastore else None))
    return next(iter(runtimes.values())), replayers


def _replay_all(combos, traces, progress_file, via_lsp: bool = False):
    """Replay every trace under every combination, interleaved trace by trace (machine
    noise hits all combinations alike) and in turn forward and backward (combinations
    1, 2, .., n for the first trace, n, .., 1 for the second: no combination always runs
    first, right after another's), with a progress bar over events; returns the runtime
    block and one result list per combination."""
    from inkling.evaluation.replay_result import runtime_config           # inkling.analysis: see the top
    runtime, replayers = _replayers(combos, via_lsp)
    gc.freeze()               # the model and the datastores, as the server does once ready
    results: list[list] = [[] for _ in combos]
    try:
        total = sum(len(t.events) for t in traces) * len(combos)
        with tqdm(total=total, desc="replaying", unit="event", file=progress_file,
                  disable=None) as bar:
            for t, trace in enumerate(traces):
                bar.set_postfix_str(trace.name[:40])
                order = range(len(replayers)) if t % 2 == 0 else reversed(range(len(replayers)))
                for i in order:
                    results[i].append(replayers[i].replay(trace, bar.update))
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
    from inkling.completion.drafting.acceptance import AcceptanceMeter
    from inkling.completion.drafting.draft_mode import choice_for
    return choice_for(runtime, options.model.forward, AcceptanceMeter.prior).report()


def _replay_on_ray(args, combos, traces):
    """(runtime block, results per combination, ray config, interrupted) of a replay
    sharded over Ray: every trace x combination pair is a task."""
    from inkling.evaluation.ray_replay import replay_on_ray               # the Engine too
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


def _cmd_replay(args) -> int:
    from inkling.evaluation.replay_result import comparison_json, replay_json     # inkling.analysis: see the top
    from inkling.evaluation.report import PLOTS_MISSING, plots_available, render_report   # the same
    options = replay_options(args)
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
        runtime, runs = _replay_all(combos, traces, sys.stderr, args.via_lsp)
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


# ------------------------------------------------------------------------ trace
def _read_python(arg: str) -> str:
    try:
        return Path(arg).read_bytes().decode("utf-8")
    except OSError as exc:
        raise RetypeError(f"{arg}: cannot be read ({exc.strerror or exc})") from None
    except UnicodeDecodeError as exc:
        raise RetypeError(f"{arg}: not UTF-8 text (byte {exc.start})") from None


def _retype_inputs(files: list[str], root: str | None = None
                   ) -> tuple[dict[str, str], list[str]]:
    """(workspace-relative path -> text, each FILE's path); the root is ``root`` or the
    deepest folder holding every FILE."""
    resolved = [Path(f).resolve() for f in files]
    texts = [_read_python(f) for f in files]
    top = Path(root).resolve() if root else Path(os.path.commonpath([r.parent for r in resolved]))
    outside = [f for f, r in zip(files, resolved) if top not in r.parents]
    if outside:
        raise RetypeError(f"{outside[0]}: not inside --root {root}")
    rel = [r.relative_to(top).as_posix() for r in resolved]
    return dict(zip(rel, texts)), rel


def _cmd_trace_retype(args) -> int:
    workspace, paths = _retype_inputs(args.files + args.workspace, args.root)
    retyped = list(dict.fromkeys(paths[:len(args.files)]))
    out = Path(args.out)
    options = RetypeOptions(seed=args.seed, max_functions=max(0, args.max_functions),
                            mid_line=args.mid_line, accept=args.accept)
    written = 0
    for path in retyped:
        text = workspace[path]
        try:
            builder = retype_trace(path, text, workspace, options)
        except RetypeError as exc:
            print(f"inkling: skipped {exc}", file=sys.stderr)
            continue
        print(builder.write(out / f"{builder.header.name.removesuffix('.py')}.jsonl"))
        written += 1
    if not written:
        raise RetypeError("no trace was written (no FILE has a function body to retype)")
    return 0


def _cmd_trace_git(args) -> int:
    exts = tuple(e if e.startswith(".") else "." + e for e in (args.ext or [".py"]))
    options = GitTraceOptions(since=args.since, extensions=exts, seed=args.seed,
                              max_commits=max(0, args.max_commits),
                              context_files=max(0, args.context_files), accept=args.accept)
    traces = GitTracer(GitRepo(args.repo), options).traces()
    out = Path(args.out)
    for t in traces:
        print(t.builder.write(out / f"{t.builder.header.name}.jsonl"))
    if not traces:
        print(f"inkling: no commit after {args.since} changes a {'/'.join(exts)} file",
              file=sys.stderr)
    return 0
