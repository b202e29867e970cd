"""`inkling replay`: its flags and the options they ask for. The replay itself is in
replay_run.py, imported when the command runs (it loads the Engine: `inkling --help`
does not pay for it)."""
from __future__ import annotations

from inkling.completion.options import (CACHE_MODES, DECODERS, DRAFT_MODES, MONITOR_MODES,
                                        InklingOptions)

from inkling.cli.flags import add_model_flags, add_ray_flags, model_changes, positive


def add_command(sub) -> None:
    """Register `replay` on the `inkling` command's subparsers."""
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
                   "cache.mode=full,pie), interleaved event by event; the JSON gets a "
                   "'runs' list and the report a side-by-side comparison")
    p.add_argument("--ablate", action="append", metavar="KEY=V",
                   help="replay the options as given and then with each of these changes "
                   "alone (repeatable; e.g. --ablate completion.monitor=off --ablate "
                   "completion.draft=none: what each mechanism buys), interleaved as "
                   "--compare is, with the same 'runs' list and comparison")
    add_ray_flags(p, "the replay (every trace, or trace x combination, a task)")
    p.set_defaults(func=_cmd_replay)


def replay_options(args):
    """The InklingOptions the flags ask for; a flag not given keeps its default."""
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


def _cmd_replay(args) -> int:
    options = replay_options(args)
    # lazy: the replay imports the Engine and torch, which are slow to import
    from inkling.cli.replay_run import replay
    return replay(args, options)
