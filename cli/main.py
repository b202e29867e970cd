"""The `inkling` command line: `complete`, `serve`, `evaluate`, `train` and `build-native` here,
the other commands beside it, what they share in flags.py.

The model, the server and the training recipe are imported by the command that runs them, so
`inkling --help` and the trace commands do not pay for them."""
from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import logging
import sys
import time
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from inkling.runtime.errors import ModelError
from inkling.completion.document import Position, utf16_len
from inkling.completion.errors import InklingError
from inkling.completion.decoding.names import Trigger
from inkling.completion.decoding.plan import decoder_for
from inkling.completion.options import (CACHE_MODES, DECODERS, DRAFT_MODES, FIM_ORDERS,
                                        MONITOR_MODES, InklingOptions)
from inkling.models import resolve_model_path
from inkling.training.model_card import write_model_card
from inkling.training.train_options import HELP, TrainOptions

from inkling.cli import datastore, replay, trace
from inkling.cli.flags import (add_model_flags, add_ray_flags, load_progress, model_changes,
                               ray_options)


class CliError(Exception):
    """A problem with the user's input: printed as one line, exit status 2."""


def _flag_bool(text: str) -> bool:
    if text.lower() in ("1", "true", "yes", "on"):
        return True
    if text.lower() in ("0", "false", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"{text!r} is not a boolean (true or false)")


def _add_dataclass_flags(p: argparse.ArgumentParser, cls, texts: dict | None = None) -> None:
    # default None: the command knows which options were named (a resume keeps the others)
    for f in dataclasses.fields(cls):
        flag = "--" + f.name.replace("_", "-")
        kind = _flag_bool if isinstance(f.default, bool) else type(f.default)
        text = (texts or {}).get(f.name, "")
        p.add_argument(flag, type=kind, default=None, dest=f.name,
                       help=f"{text} (default: {f.default!r})".strip())


def _cmd_train(args) -> int:
    if importlib.util.find_spec("matplotlib") is None:    # asked now, not after the run
        raise CliError("inkling train plots its loss curve with matplotlib, which this "
                       "install lacks: pip install 'inkling[train]'")
    # lazy: the training recipe imports torch and transformers, which are slow to import
    from inkling.training.training import train
    given = {f.name: getattr(args, f.name) for f in dataclasses.fields(TrainOptions)
             if getattr(args, f.name) is not None}
    opts = TrainOptions(**given)
    try:
        train(opts, given)
    except (FileNotFoundError, ValueError) as exc:
        raise CliError(str(exc)) from None
    return 0


def _read_source(path_arg: str) -> str:
    path = Path(path_arg)
    if not path.exists():
        raise CliError(f"{path_arg}: no such file")
    if not path.is_file():
        raise CliError(f"{path_arg}: not a regular file")
    data = path.read_bytes()
    if b"\0" in data[:8192]:
        raise CliError(f"{path_arg}: looks like a binary file (it contains NUL bytes)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CliError(f"{path_arg}: not UTF-8 text (byte {exc.start} cannot be decoded)") from None


def _cli_position(doc, line: int, col: int):
    """1-based line and column (in characters, as editors show them) -> LSP Position."""
    if not 1 <= line <= doc.line_count:
        raise CliError(f"{doc.uri}: line {line} is out of range (the file has "
                       f"{doc.line_count} lines)")
    text = doc.line_text(line - 1)
    if not 1 <= col <= len(text) + 1:
        raise CliError(f"{doc.uri}: column {col} is out of range (line {line} has "
                       f"{len(text)} characters, so columns 1 to {len(text) + 1})")
    return Position(line - 1, utf16_len(text[:col - 1]))


def _options_from_args(args):
    """The options `inkling complete`'s flags ask for; a flag not given keeps its default."""
    completion = {key: value for key, value in (
        ("fim_order", args.fim_order), ("decoder", args.decoder), ("draft", args.draft),
        ("monitor", args.monitor), ("drafts", args.drafts)) if value is not None}
    if args.max_new_tokens:
        completion["max_new_tokens"] = args.max_new_tokens
    changes = {"model": model_changes(args), "completion": completion}
    if args.cache is not None:
        changes["cache"] = {"mode": args.cache}
    return InklingOptions().merged(changes)


def _cmd_complete(args) -> int:
    # lazy: the Engine imports torch, which is slow to import
    from inkling.completion.engine import Engine
    from inkling.completion.model_report import model_description   # lazy: torch too
    text = _read_source(args.file)
    engine = Engine(_options_from_args(args))
    k = engine.options.completion.drafts
    uri = Path(args.file).resolve().as_uri()
    engine.open(uri, text)
    position = _cli_position(engine.document(uri), args.line, args.col)
    runtime = engine.load_model(load_progress())
    if engine.uses_datastore:
        engine.build_datastore(load_progress())
    prior = engine.acceptance.prior
    print(model_description(engine.options, runtime, prior).line(), file=sys.stderr)
    result = engine.complete(uri, position, k=k, trigger=Trigger.INVOKED)
    if not result.drafts:
        print("inkling: no suggestion at this position", file=sys.stderr)
    if args.json:
        print(json.dumps({
            "file": args.file, "line": args.line, "col": args.col,
            "drafts": [{"id": d.id, "text": d.text, "logprob": round(d.logprob, 4)}
                       for d in result.drafts],
            "block": result.block, "stopped_by": result.stopped_by,
            "latency_ms": round(result.latency_ms, 1),
            "first_token_ms": round(result.first_token_ms, 1),
            "forwards": result.forwards, "prefill_tokens": result.prefill_tokens,
            "model": model_description(engine.options, runtime, prior).as_dict()}, indent=2))
    else:
        for i, d in enumerate(result.drafts):      # fewer than k where drafts repeated
            if len(result.drafts) > 1:
                print(f"--- draft {i + 1} of {len(result.drafts)}")
            print(d.text)
    return 0


def _cmd_evaluate(args) -> int:
    # lazy: the Engine imports torch, which is slow to import
    from inkling.completion.engine import Engine
    from inkling.evaluation.held_out import evaluate_next_line  # lazy: the Engine's cost too
    if args.drafts < 1:
        raise CliError(f"--drafts {args.drafts}: at least 1")
    if args.write_card and args.drafts != 1:
        raise CliError(f"--write-card with --drafts {args.drafts}: the card's figure is one "
                       "draft's next-line exact match; measure several drafts without it")
    changes = {"model": model_changes(args)}
    if args.decoder is not None:
        changes["completion"] = {"decoder": args.decoder}
    base = InklingOptions().merged(changes)
    decoder = decoder_for(base.completion.decoder, args.drafts, "invoked")
    orders = ["spm", "psm"] if args.fim_order == "both" else [args.fim_order]
    sets = ["stdlib", "package"] if args.held_out == "both" else [args.held_out]
    if args.ray:
        from inkling.evaluation.ray_evaluate import evaluate_on_ray  # lazy: the Engine's too
        results, _ = evaluate_on_ray(args.model or "", base, [(h, o) for h in sets
                                                             for o in orders],
                                     args.lines_per_file, args.seed, ray_options(args),
                                     sys.stderr, args.drafts)
        results = [r.summary() for r in results]
    else:
        engine = Engine(base)
        engine.load_model(load_progress())
        results = [evaluate_next_line(args.model or "", order, args.lines_per_file, args.seed,
                                      engine, held_out, args.drafts).summary()
                   for held_out in sets for order in orders]
    for r in results:
        r["decoder"] = decoder
        many = (f"; one of the {r['drafts']} drafts {100 * r['exact_any_match']:.1f}% "
                f"({r['exact_any']}/{r['lines']})" if r["drafts"] > 1 else "")
        first = "the first draft " if r["drafts"] > 1 else ""
        how = f", {decoder}" if decoder != "greedy" else ""
        print(f"next-line exact match ({r['held_out']}, {r['fim_order']}{how}): {first}"
              f"{100 * r['exact_match']:.1f}% ({r['exact']}/{r['lines']} lines){many}, "
              f"latency p50 {r['latency_ms_p50']} ms")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")
    if args.write_card:
        command = "inkling evaluate " + " ".join(sys.argv[2:]) if len(sys.argv) > 1 else ""
        path = write_model_card(resolve_model_path(args.model or ""), results, command.strip())
        print(f"model card written to {path}")
    return 0


def _cmd_serve(args) -> int:
    # lazy: the server imports the Engine and pygls, which import torch, slow to import
    from inkling.lsp.server import serve
    logging.basicConfig(level=getattr(logging, args.log_level.upper()), stream=sys.stderr,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    serve(InklingOptions().merged({"model": model_changes(args)}), args.tcp, args.host)
    return 0


def _port(text: str) -> int:
    """A TCP port, 1 to 65535 (argparse names the flag and the value otherwise)."""
    port = int(text) if text.strip().isdigit() else -1
    if not 1 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"a port is 1 to 65535, got {text!r}")
    return port


def _cmd_build_native(args) -> int:
    """Build the native forward now, in the foreground: a progress line (updated in place
    on a terminal, once a minute otherwise), then where the module is and how long it took;
    exit status 1 with the compiler's first error."""
    # lazy: the native build imports torch, which is slow to import
    from inkling.runtime import native_build
    start, said = time.monotonic(), [-60.0]

    def progress(message: str) -> None:
        if sys.stderr.isatty():
            print(f"\r\033[K{message}", end="", file=sys.stderr, flush=True)
        elif time.monotonic() - said[0] >= 60:
            said[0] = time.monotonic()
            print(message, file=sys.stderr, flush=True)
    try:
        p = native_build.plan()
        was_built = p.module.is_file()
        native_build.load_module(native_build.build(p, progress))
    except (native_build.BuildFailed, ImportError, OSError) as exc:
        print(f"{chr(10) if sys.stderr.isatty() else ''}inkling: the native forward did not "
              f"build: {exc}", file=sys.stderr)
        return 1
    if sys.stderr.isatty():
        print(file=sys.stderr)
    flags = " ".join(p.flags) or "default flags"
    how = "was built already" if was_built else \
        f"is ready after {time.monotonic() - start:.0f} s ({flags})"
    print(f"the native forward {how}: {p.module}")
    return 0


def _version() -> str:
    try:
        return version("inkling")
    except PackageNotFoundError:                        # run from a source tree, not installed
        return "(not installed)"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="inkling", description="Code completion with a local language model.")
    parser.add_argument("--version", action="version", version=f"inkling {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for add in (_add_complete_parser, _add_serve_parser, _add_evaluate_parser,
                _add_train_parser, _add_build_native_parser, replay.add_command,
                trace.add_command, datastore.add_command):
        add(sub)
    return parser


def _add_complete_parser(sub) -> None:
    p = sub.add_parser("complete", help="print the suggestion at a position in a file",
                       description="Complete code at LINE:COL of FILE (both count from 1).")
    p.add_argument("file", metavar="FILE")
    p.add_argument("--line", type=int, required=True, help="line, from 1")
    p.add_argument("--col", type=int, required=True, help="column in characters, from 1")
    # flags not given (None): the options tree decides (completion/options.py)
    d = InklingOptions()
    p.add_argument("--drafts", type=int, default=None, metavar="K",
                   help=f"number of drafts (default: {d.completion.drafts})")
    p.add_argument("--max-new-tokens", type=int, default=None, metavar="N",
                   help=f"token budget of a line (default: {d.completion.max_new_tokens})")
    p.add_argument("--fim-order", default=None, choices=FIM_ORDERS,
                   help=f"default: {d.completion.fim_order}")
    p.add_argument("--decoder", default=None, choices=DECODERS,
                   help=f"how several drafts are decoded (greedy gives one; default: "
                   f"{d.completion.decoder})")
    p.add_argument("--draft", default=None, choices=DRAFT_MODES,
                   help=f"retrieval drafting verified by the model (lossless; default: "
                   f"{d.completion.draft})")
    p.add_argument("--monitor", default=None, choices=MONITOR_MODES,
                   help=f"monitor-guided decoding (default: {d.completion.monitor})")
    p.add_argument("--cache", default=None, choices=CACHE_MODES,
                   help=f"KV cache mode (default: {d.cache.mode})")
    p.add_argument("--json", action="store_true", help="print JSON with the drafts and timings")
    add_model_flags(p)
    p.set_defaults(func=_cmd_complete)


def _add_serve_parser(sub) -> None:
    p = sub.add_parser("serve", help="run the language server (stdio, or --tcp PORT)",
                       description="The inkling language server. Settings come from the "
                       "client's initializationOptions and workspace/didChangeConfiguration. "
                       "Over stdio it serves one client and ends with it; over --tcp each "
                       "connection is a session of its own (its documents, settings and "
                       "answers) on the one loaded model, exit or a disconnect ends only that "
                       "session, and the server listens until SIGTERM or SIGINT.")
    p.add_argument("--stdio", action="store_true", help="talk over stdin/stdout (the default)")
    p.add_argument("--tcp", type=_port, metavar="PORT",
                   help="listen on a TCP port (1 to 65535) instead, for any number of clients")
    p.add_argument("--host", default="127.0.0.1", help="address for --tcp (default: loopback)")
    p.add_argument("--log-level", default="warning",
                   choices=("debug", "info", "warning", "error"),
                   help="what the server logs to standard error (default: warning)")
    add_model_flags(p)
    p.set_defaults(func=_cmd_serve)


def _add_evaluate_parser(sub) -> None:
    p = sub.add_parser("evaluate", help="measure next-line exact match on held-out files",
                       description="Next-line exact match of a model on the held-out "
                       "standard-library files and package, through the Engine.")
    p.add_argument("--fim-order", default="both", choices=("both", "auto", "spm", "psm"),
                   help="the fill-in-the-middle prompt layout: suffix-prefix-middle, "
                   "prefix-suffix-middle, the model's own (auto), or spm and psm (default both)")
    p.add_argument("--lines-per-file", type=int, default=40, metavar="N",
                   help="lines drawn from each held-out file (default 40)")
    p.add_argument("--held-out", default="both",
                   choices=("both", "stdlib", "package", "tuning", "reporting"),
                   help="the held-out standard-library files, the held-out package "
                   "(toolz 1.0.0), both of them measured apart (default), the tuning set "
                   "(the two together: what the defaults were chosen on) or the reporting "
                   "set (pinned packages no default was chosen on); none is trained on")
    p.add_argument("--seed", type=int, default=0,
                   help="seed of the draw of lines (default 0: the model card's lines)")
    p.add_argument("--drafts", type=int, default=1, metavar="K",
                   help="drafts a completion (default 1, the card's figure); K > 1 decodes K "
                   "as an invoked completion does, and reports the first draft's exact match "
                   "and any draft's")
    p.add_argument("--decoder", default=None, choices=DECODERS,
                   help=f"the decoder (default: {InklingOptions().completion.decoder}; greedy, "
                   "branches, superposed and sequential decode one draft greedily, beam by "
                   "beam search)")
    p.add_argument("--json", metavar="PATH", help="write the results as JSON")
    p.add_argument("--write-card", action="store_true",
                   help="write the model card (README.md) into the model folder")
    add_model_flags(p)
    add_ray_flags(p, "the evaluation (every held-out file a task)")
    p.set_defaults(func=_cmd_evaluate)


def _add_train_parser(sub) -> None:
    p = sub.add_parser("train", help="train the bundled model from the standard library",
                       description="Reproduce the bundled model: tokenizer, fill-in-the-middle "
                       "samples, a small Llama, loss log and loss curve.")
    _add_dataclass_flags(p, TrainOptions, HELP)
    p.set_defaults(func=_cmd_train)


def _add_build_native_parser(sub) -> None:
    p = sub.add_parser("build-native", help="build the native CPU forward now (once per "
                       "machine)", description="Compile the native forward's C++ layers for "
                       "this machine now, with a progress line. Otherwise the first start "
                       "builds them in the background and serves with the compact forward.")
    p.set_defaults(func=_cmd_build_native)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return args.func(args)
    except CliError as exc:
        print(f"inkling: error: {exc}", file=sys.stderr)
        return 2
    except (ModelError, InklingError) as exc:   # the Engine's and the runtime's: they
        print(f"inkling: error: {exc}", file=sys.stderr)   # name their culprit
        return 2


if __name__ == "__main__":
    sys.exit(main())
