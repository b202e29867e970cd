"""`inkling datastore model`: the model's own continuations, written beside the model.

The Engine and the drafter are imported by the command that loads a model, not for
`inkling --help` (each says what it costs).
"""
from __future__ import annotations

import dataclasses
import sys
import time
from pathlib import Path

from tqdm import tqdm

from inkling.completion.drafting.model_datastore import (FILE_NAME, SampleOptions,
                                                         build_model_datastore, fingerprint,
                                                         save)
from inkling.completion.errors import OptionError
from inkling.completion.options import InklingOptions

from inkling.cli.flags import add_model_flags, load_progress, model_changes, positive


def add_command(sub) -> None:
    """Register `datastore` on the `inkling` command's subparsers."""
    p = sub.add_parser("datastore", help="build drafting datastores",
                       description="Build the datastores retrieval drafting searches.")
    kinds = p.add_subparsers(dest="datastore_kind", metavar="KIND", required=True)
    m = kinds.add_parser(
        "model", help="the model's greedy continuations at sampled positions of code",
        description="Sample positions of a body of code, let the model continue each to the "
        "end of its line (greedy), and write the continuations with their contexts as the "
        "model's datastore (`completion.model_datastore`; `auto` finds it in the model "
        "folder).")
    add_model_flags(m)
    d = SampleOptions()
    m.add_argument("--from", dest="source", default="corpus", metavar="SOURCE",
                   help="corpus (the bundled model's training files; the default) or a folder")
    m.add_argument("--items", type=positive, default=d.items, metavar="N",
                   help=f"positions sampled (default: {d.items})")
    m.add_argument("--batch", type=positive, default=d.batch, metavar="N",
                   help=f"prompts per forward pass (default: {d.batch})")
    m.add_argument("--seed", type=int, default=d.seed,
                   help=f"seed of the sampled positions (default: {d.seed})")
    m.add_argument("--out", metavar="PATH", help="where to write it (default: "
                   "model_datastore.npz in the model folder)")
    m.set_defaults(func=_cmd_model_datastore)


def _cmd_model_datastore(args) -> int:
    # lazy: the Engine imports torch, which is slow to import
    from inkling.completion.engine import Engine
    from inkling.completion.drafting.drafter import line_end_ids  # lazy: torch, as the Engine
    engine = Engine(InklingOptions().merged({"model": model_changes(args),
                                             "completion": {"datastore": args.source}}))
    runtime = engine.load_model(load_progress())
    store = engine.build_datastore(load_progress())        # the code to sample from
    if store is None:
        raise OptionError("--from none leaves nothing to sample; name corpus or a folder")
    sequences = getattr(store.index, "index", store.index).sequences()   # a folder's WorkspaceIndex
    options = SampleOptions(items=args.items, batch=args.batch, seed=args.seed)
    out = Path(args.out) if args.out else runtime.path / FILE_NAME
    t0 = time.perf_counter()
    tokens, bounds = build_model_datastore(runtime, sequences, line_end_ids(runtime),
                                           options, _bar(args.items))
    meta = {"fingerprint": fingerprint(runtime.path), "model": runtime.path.name,
            "source": args.source, "fim_order": runtime.fim_order,
            "sampling": dataclasses.asdict(options),
            "seconds": round(time.perf_counter() - t0, 1)}
    save(out, tokens, bounds, meta)
    print(f"{len(bounds) - 1} continuations, {len(tokens)} tokens, written to {out} "
          f"in {meta['seconds']} s", file=sys.stderr)
    return 0


def _bar(total: int):
    bar = tqdm(total=total, desc="the model writes continuations", unit="item", file=sys.stderr,
               disable=None)

    def report(stage: str, fraction: float) -> None:
        bar.n = round(fraction * total)
        bar.refresh()
        if fraction >= 1.0:
            bar.close()
    return report
