"""The `inkling` command line. Each command imports only what it needs."""
from __future__ import annotations

import argparse
import dataclasses
import sys


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
    from inkling.models.train_options import TrainOptions
    from inkling.models.training import train
    given = {f.name: getattr(args, f.name) for f in dataclasses.fields(TrainOptions)
             if getattr(args, f.name) is not None}
    opts = TrainOptions(**given)
    try:
        train(opts, given)
    except (FileNotFoundError, ValueError) as exc:
        raise CliError(str(exc)) from None
    return 0


def _read_source(path_arg: str) -> str:
    from pathlib import Path
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
    from inkling.completion.document import Position, utf16_len
    if not 1 <= line <= doc.line_count:
        raise CliError(f"{doc.uri}: line {line} is out of range (the file has "
                       f"{doc.line_count} lines)")
    text = doc.line_text(line - 1)
    if not 1 <= col <= len(text) + 1:
        raise CliError(f"{doc.uri}: column {col} is out of range (line {line} has "
                       f"{len(text)} characters, so columns 1 to {len(text) + 1})")
    return Position(line - 1, utf16_len(text[:col - 1]))


def _load_progress():
    """A progress bar on standard error (only on a terminal) for model loading."""
    from tqdm import tqdm
    bar = tqdm(total=100, desc="loading model", unit="%", file=sys.stderr, disable=None,
               leave=False, bar_format="{desc}: {bar} {n:.0f}%")

    def report(stage: str, fraction: float) -> None:
        bar.set_description(stage)
        bar.n = round(fraction * 100)
        bar.refresh()
        if fraction >= 1.0:
            bar.close()
    return report


def _options_from_args(args):
    """The options `inkling complete`'s flags ask for: a flag not given (None) keeps the
    options tree's default."""
    from inkling.completion.options import InklingOptions
    completion = {key: value for key, value in (
        ("fim_order", args.fim_order), ("decoder", args.decoder), ("draft", args.draft),
        ("monitor", args.monitor), ("drafts", args.drafts)) if value is not None}
    if args.max_new_tokens:
        completion["max_new_tokens"] = args.max_new_tokens
    changes = {"model": {"path": args.model or "", "device": args.device, "dtype": args.dtype},
               "completion": completion}
    if args.cache is not None:
        changes["cache"] = {"mode": args.cache}
    return InklingOptions().merged(changes)


def _cmd_complete(args) -> int:
    import json
    from pathlib import Path

    from inkling.completion.engine import Engine
    text = _read_source(args.file)
    engine = Engine(_options_from_args(args))
    k = engine.options.completion.drafts
    uri = Path(args.file).resolve().as_uri()
    engine.open(uri, text)
    position = _cli_position(engine.document(uri), args.line, args.col)
    engine.load_model(_load_progress())
    if engine.uses_datastore:
        engine.build_datastore(_load_progress())
    result = engine.complete(uri, position, k=k, trigger="invoked")
    if len(result.drafts) < k:
        print(f"inkling: note: the {engine.options.completion.decoder} decoder gave "
              f"{len(result.drafts)} draft(s) of the {k} asked for", file=sys.stderr)
    if args.json:
        print(json.dumps({
            "file": args.file, "line": args.line, "col": args.col,
            "drafts": [{"id": d.id, "text": d.text, "logprob": round(d.logprob, 4)}
                       for d in result.drafts],
            "block": result.block, "stopped_by": result.stopped_by,
            "latency_ms": round(result.latency_ms, 1),
            "first_token_ms": round(result.first_token_ms, 1),
            "forwards": result.forwards, "prefill_tokens": result.prefill_tokens}, indent=2))
    else:
        for i, d in enumerate(result.drafts):
            if len(result.drafts) > 1:
                print(f"--- draft {i + 1}")
            print(d.text)
    return 0


def _cmd_evaluate(args) -> int:
    import json
    from pathlib import Path

    from inkling.completion.engine import Engine, resolve_model_path
    from inkling.completion.options import InklingOptions
    from inkling.lsp.evaluation import evaluate_next_line
    base = InklingOptions().merged({"model": {"path": args.model or "", "device": args.device,
                                              "dtype": args.dtype}})
    orders = ["spm", "psm"] if args.fim_order == "both" else [args.fim_order]
    sets = ["stdlib", "package"] if args.held_out == "both" else [args.held_out]
    if args.ray:
        from .cli_flags import ray_options
        from .ray_evaluate import evaluate_on_ray
        results, _ = evaluate_on_ray(args.model or "", base, [(h, o) for h in sets
                                                             for o in orders],
                                     args.lines_per_file, args.seed, ray_options(args),
                                     sys.stderr)
        results = [r.summary() for r in results]
    else:
        engine = Engine(base)
        engine.load_model(_load_progress())
        results = [evaluate_next_line(args.model or "", order, args.lines_per_file, args.seed,
                                      engine, held_out).summary()
                   for held_out in sets for order in orders]
    for r in results:
        print(f"next-line exact match ({r['held_out']}, {r['fim_order']}): "
              f"{100 * r['exact_match']:.1f}% ({r['exact']}/{r['lines']} lines), "
              f"latency p50 {r['latency_ms_p50']} ms")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")
    if args.write_card:
        from inkling.models.model_card import write_model_card
        command = "inkling evaluate " + " ".join(sys.argv[2:]) if len(sys.argv) > 1 else ""
        path = write_model_card(resolve_model_path(args.model or ""), results, command.strip())
        print(f"model card written to {path}")
    return 0


def _cmd_serve(args) -> int:
    import logging

    from inkling.completion.engine import Engine
    from inkling.lsp.server import serve
    logging.basicConfig(level=getattr(logging, args.log_level.upper()), stream=sys.stderr,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    changes = {"model": {"path": args.model or "", "device": args.device, "dtype": args.dtype}}
    from inkling.completion.options import InklingOptions
    serve(Engine(InklingOptions().merged(changes)), args.tcp, args.host)
    return 0


def _add_model_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", metavar="PATH", help="a local Hugging Face model folder "
                   "(default: the bundled model)")
    p.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N (default: auto)")
    p.add_argument("--dtype", default="auto",
                   help="auto, float32, float16 or bfloat16 (default: auto)")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="inkling", description="Code completion with a local language model.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    p = sub.add_parser("complete", help="print the suggestion at a position in a file",
                       description="Complete code at LINE:COL of FILE (both count from 1).")
    p.add_argument("file", metavar="FILE")
    p.add_argument("--line", type=int, required=True, help="line, from 1")
    p.add_argument("--col", type=int, required=True, help="column in characters, from 1")
    # flags not given (None): the options tree decides (completion/options.py)
    from inkling.completion.options import (CACHE_MODES, DECODERS, DRAFT_MODES, FIM_ORDERS,
                                            MONITOR_MODES, InklingOptions)
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
    _add_model_flags(p)
    p.set_defaults(func=_cmd_complete)

    p = sub.add_parser("serve", help="run the language server (stdio, or --tcp PORT)",
                       description="The inkling language server. Settings come from the "
                       "client's initializationOptions and workspace/didChangeConfiguration.")
    p.add_argument("--stdio", action="store_true", help="talk over stdin/stdout (the default)")
    p.add_argument("--tcp", type=int, metavar="PORT", help="listen on a TCP port instead")
    p.add_argument("--host", default="127.0.0.1", help="address for --tcp (default: loopback)")
    p.add_argument("--log-level", default="warning",
                   choices=("debug", "info", "warning", "error"))
    _add_model_flags(p)
    p.set_defaults(func=_cmd_serve)

    p = sub.add_parser("evaluate", help="measure next-line exact match on held-out files",
                       description="Greedy next-line exact match of a model on the held-out "
                       "standard-library files, through the Engine.")
    p.add_argument("--fim-order", default="both", choices=("both", "auto", "spm", "psm"))
    p.add_argument("--lines-per-file", type=int, default=40, metavar="N")
    p.add_argument("--held-out", default="both", choices=("both", "stdlib", "package"),
                   help="the held-out standard-library files, the held-out package "
                   "(toolz 1.0.0, never trained on), or both (default)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", metavar="PATH", help="write the results as JSON")
    p.add_argument("--write-card", action="store_true",
                   help="write the model card (README.md) into the model folder")
    _add_model_flags(p)
    from .cli_flags import add_ray_flags
    add_ray_flags(p, "the evaluation (every held-out file a task)")
    p.set_defaults(func=_cmd_evaluate)

    p = sub.add_parser("train", help="train the bundled model from the standard library",
                       description="Reproduce the bundled model: tokenizer, fill-in-the-middle "
                       "samples, a small Llama, loss log and loss curve.")
    from inkling.models.train_options import HELP, TrainOptions
    _add_dataclass_flags(p, TrainOptions, HELP)
    p.set_defaults(func=_cmd_train)
    from .replay_cli import add_commands
    add_commands(sub)
    from .datastore_cli import add_commands as add_datastore_commands
    add_datastore_commands(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return args.func(args)
    except CliError as exc:
        print(f"inkling: error: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # errors of the Engine and the runtime name their culprit
        from inkling.cache.errors import ModelError
        from inkling.completion.errors import InklingError
        if isinstance(exc, (ModelError, InklingError)):
            print(f"inkling: error: {exc}", file=sys.stderr)
            return 2
        raise


if __name__ == "__main__":
    sys.exit(main())
