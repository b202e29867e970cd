"""The cost curve: edit-to-first-token, decoding and draft-tree forwards as context and model grow.

    python benchmarks/scale.py [--sizes 6m,50m,200m] [--contexts 1k,2k,4k,8k,16k]
                               [--reps 5] [--budget 20] [--max-point-s 900]
                               [--threads 0] [--device auto] [--dtype auto]
                               [--json PATH] [--plot PATH]

Random-weight Llama configurations (the bundled model's config with random weights for
``6m``; wider and deeper ones with grouped-query attention, 4 query heads per key/value
head, for ``50m`` and ``200m``; the bundled tokenizer's vocabulary; positions extended to
32k in the config) are saved to a temporary folder and loaded by ``load_runtime``, so
each runs exactly as inkling runs a model folder (its thread choice, CPU weight layout,
compact forward). The context is real code: standard-library Python sources, tokenized
by the bundled tokenizer, cut to N tokens.

Per (size, context), after a cold prefill of the context (timed once, reported):

* edit-to-first-token, ``PromptCache.sync`` of the edited prompt until the first token's
  logits (argmax taken), from the same cached state each repetition, in ``full`` and
  ``pie`` (the Engine's stale threshold):
  - ``top``: 4 tokens inserted at 5% of the context (everything after shifts: ``full``
    recomputes 95% of the context, ``pie`` re-rotates the shifted keys and runs 5 tokens);
  - ``cursor``: 2 tokens typed 8 tokens before the end (the rest of the cursor's line
    follows; a pure append, as the ``spm`` prompt order gives, is the same 2-token forward
    in both modes);
* decoding: greedy one-row steps after the context, ms per token (median step);
* a draft-tree forward of 1, 4, 16 and 64 rows (a chain, as a verified draft) after the
  context, then truncated back (as ``decode_step.py`` does); ms and the ratio to 1 row.

Repetitions: ``--reps`` of each measurement, fewer where one measurement has already
spent ``--budget`` seconds (the median is reported). A point whose estimated cost (cold
prefill and one ``full`` top edit, extrapolated from the smaller contexts) passes
``--max-point-s`` is skipped and shown as such. Runs unchanged on CUDA (``--device
auto``; the runtime's dtype, bfloat16 on a GPU).
"""
from __future__ import annotations

import argparse
import copy
import gc
import json
import math
import os
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch

from inkling.runtime.model_loader import load_runtime
from inkling.cache.prompt_cache import PromptCache
from inkling.completion.options import InklingOptions
from inkling.models import BUNDLED_MODEL_DIR

# hidden, intermediate, layers, query heads, key/value heads, head_dim
SHAPES = {
    "6m": None,                                   # the bundled config (256, 688, 6, 8, 2, 32)
    "50m": (512, 1536, 15, 8, 2, 64),
    "200m": (1024, 3072, 16, 16, 4, 64),
}
CONTEXTS = {"1k": 1024, "2k": 2048, "4k": 4096, "8k": 8192, "16k": 16384}
MAX_POSITIONS = 32768
EDITS = ("top", "cursor")
MODES = ("full", "pie")
TOP_AT = 0.05                 # the top edit's place, as a share of the context
TOP_TEXT = "x += 1\n"         # inserted there (4 tokens)
TYPED_TEXT = "self."          # typed at the cursor (2 tokens)
CURSOR_TAIL = 8               # tokens after the cursor
DECODE_STEPS = 24
TREE_ROWS = (1, 4, 16, 64)
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "inkling.json")


@dataclass
class Point:
    size: str
    context: int
    skipped: str = ""                             # the reason, when skipped
    cold_prefill_ms: float = 0.0
    edit_ms: dict = field(default_factory=dict)   # "top/full" -> ms
    prefilled: dict = field(default_factory=dict)  # "top/full" -> tokens run by the sync
    decode_ms: float = 0.0                        # per token
    tree_ms: dict = field(default_factory=dict)   # rows -> ms
    reps: dict = field(default_factory=dict)      # measurement -> repetitions run


# ---------------------------------------------------------------- the models
def config_for(size: str):
    """A LlamaConfig: the bundled one, reshaped for ``size``, positions extended."""
    from transformers import LlamaConfig
    cfg = LlamaConfig.from_pretrained(BUNDLED_MODEL_DIR)
    if SHAPES[size] is not None:
        hidden, inter, layers, heads, kv_heads, head_dim = SHAPES[size]
        cfg.hidden_size, cfg.intermediate_size, cfg.num_hidden_layers = hidden, inter, layers
        cfg.num_attention_heads, cfg.num_key_value_heads, cfg.head_dim = heads, kv_heads, head_dim
    cfg.max_position_embeddings = MAX_POSITIONS
    return cfg


def write_model(size: str, folder: Path) -> int:
    """A random-weight model of ``size`` with the bundled tokenizer into ``folder``;
    returns its parameter count."""
    from transformers import LlamaForCausalLM
    from transformers.utils import logging as hf_logging
    hf_logging.disable_progress_bar()
    torch.manual_seed(0)
    model = LlamaForCausalLM(config_for(size)).float()
    n_params = sum(p.numel() for p in model.parameters())   # tied output layer counted once
    model.save_pretrained(folder, safe_serialization=True)
    for name in TOKENIZER_FILES:
        if (BUNDLED_MODEL_DIR / name).is_file():
            shutil.copy(BUNDLED_MODEL_DIR / name, folder / name)
    del model
    gc.collect()
    return n_params


def code_ids(runtime, n: int) -> list[int]:
    """The first ``n`` tokens of standard-library sources (sorted by name), concatenated."""
    from inkling.models.corpus import stdlib_root
    ids: list[int] = []
    for path in sorted(stdlib_root().glob("*.py")):
        ids += runtime.encode(path.read_text(encoding="utf-8", errors="replace"))
        if len(ids) >= n:
            return ids[:n]
    raise SystemExit(f"the standard library holds fewer than {n} tokens")


# ---------------------------------------------------------------- timing
def clock(device: torch.device) -> float:
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return time.perf_counter()


def repeat(fn, device: torch.device, reps: int, budget_s: float, setup=None) -> list[float]:
    """ms of ``fn()`` per repetition (``setup()`` before each, untimed): ``reps`` of them,
    fewer once ``budget_s`` is spent (at least one)."""
    out: list[float] = []
    for _ in range(reps):
        if setup is not None:
            setup()
        t0 = clock(device)
        fn()
        out.append((clock(device) - t0) * 1000)
        if sum(out) > budget_s * 1000:
            break
    return out


def snapshot(cache: PromptCache) -> tuple:
    """The cache's state (ids, stale flags, a copy of its key/value store)."""
    return list(cache.ids), list(cache.stale), copy.deepcopy(cache.past)


def restore(cache: PromptCache, snap: tuple) -> None:
    ids, stale, past = snap
    cache.ids, cache.stale, cache.past = list(ids), list(stale), copy.deepcopy(past)


def edited(ids: list[int], edit: str, top: list[int], typed: list[int]) -> list[int]:
    """``ids`` after the edit: ``top`` inserted at 5%, or ``typed`` before the last
    CURSOR_TAIL tokens."""
    at = int(TOP_AT * len(ids)) if edit == "top" else len(ids) - CURSOR_TAIL
    return ids[:at] + (top if edit == "top" else typed) + ids[at:]


def time_edits(runtime, snap: tuple, ids: list[int], inserts: tuple, args, point: Point) -> None:
    """Edit-to-first-token of every edit in every mode, from the state ``snap``."""
    stale = InklingOptions().cache.stale_threshold
    for edit in EDITS:
        new_ids = edited(ids, edit, *inserts)
        for mode in MODES:
            cache = PromptCache(runtime, mode, stale)
            result = []

            def sync():
                r = cache.sync(new_ids)
                int(r.logits.argmax())                       # the first token
                result.append(r)
            times = repeat(sync, runtime.device, args.reps, args.budget,
                           setup=lambda: restore(cache, snap))
            key = f"{edit}/{mode}"
            point.edit_ms[key] = statistics.median(times)
            point.prefilled[key] = result[-1].prefilled
            point.reps[key] = len(times)
            if result[-1].refreshed or result[-1].mode != mode:
                point.prefilled[key] = f"{result[-1].prefilled} ({result[-1].mode}, refreshed)"
            del cache
            gc.collect()


def time_decode(cache: PromptCache, logits: torch.Tensor, device: torch.device) -> float:
    """Median ms of a greedy one-row step after the cache; the cache is cut back after.
    ``logits``: [vocab] at the context's last token."""
    n, token, steps = len(cache), int(logits.argmax()), []
    for i in range(DECODE_STEPS + 2):                        # 2 warm-up steps
        t0 = clock(device)
        token = int(cache.extend([token])[-1].argmax())
        if i >= 2:
            steps.append((clock(device) - t0) * 1000)
    cache.truncate(n)
    return statistics.median(steps)


def time_trees(cache: PromptCache, ids: list[int], args, point: Point) -> None:
    """Forward of a chain of ``rows`` draft tokens after the cache, cut back after each."""
    n = len(cache)
    for rows in TREE_ROWS:
        tokens, parents = ids[:rows], [-1] + list(range(rows - 1))

        def tree():
            cache.extend_tree(tokens, parents)
            cache.truncate(n)
        tree()                                               # warm-up
        times = repeat(tree, cache.runtime.device, max(3, args.reps), args.budget)
        point.tree_ms[rows] = statistics.median(times)
        point.reps[f"tree{rows}"] = len(times)


def measure(runtime, ids: list[int], inserts: tuple, args, point: Point) -> None:
    """Every measurement of one (size, context) point, into ``point``."""
    device = runtime.device
    cache = PromptCache(runtime, "full")
    t0 = clock(device)
    logits = cache.extend(ids, last_only=True)[-1]                   # [vocab]
    point.cold_prefill_ms = (clock(device) - t0) * 1000
    if hasattr(cache.past, "reserve"):                # room for the edits: no reallocation
        cache.past.reserve(64 + max(TREE_ROWS))       # in the timed syncs
    snap = snapshot(cache)
    time_edits(runtime, snap, ids, inserts, args, point)
    point.decode_ms = time_decode(cache, logits, device)
    time_trees(cache, ids, args, point)
    del cache, snap
    gc.collect()


def estimate_s(done: list[Point], n: int) -> float | None:
    """Estimated seconds of a point at context ``n``: its cold prefill and one ``full``
    top edit, extrapolated from the two largest measured contexts of the size (cost ~
    context^e, e fitted between 1 and 2; 2 with one point measured)."""
    measured = sorted((p for p in done if not p.skipped), key=lambda p: p.context)
    if not measured:
        return None
    cost = [(p.context, (p.cold_prefill_ms + p.edit_ms["top/full"]) / 1000)
            for p in measured[-2:]]
    (n1, c1), (n2, c2) = cost[0], cost[-1]
    e = 2.0 if n1 == n2 else min(2.0, max(1.0, math.log(c2 / c1) / math.log(n2 / n1)))
    return c2 * (n / n2) ** e


# ---------------------------------------------------------------- the run
def run_size(size: str, contexts: list[int], args, bar) -> tuple[dict, list[Point]]:
    """Load ``size`` and measure it at every context: (its description, its points)."""
    folder = Path(tempfile.mkdtemp(prefix=f"inkling-scale-{size}-"))
    try:
        bar.set_postfix_str(f"{size}: building the model")
        n_params = write_model(size, folder)
        runtime = load_runtime(folder, device=args.device, dtype=args.dtype, threads=args.threads)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    cfg = runtime.model.config
    choice = runtime.threads                   # None on a GPU; measured: "1 or 2"
    threads = (" or ".join(map(str, choice.counts)) if choice is not None
               else torch.get_num_threads())
    info = {"size": size, "params": n_params, "threads": threads,
            "forward": runtime.forward_kind(), "hidden": cfg.hidden_size,
            "layers": cfg.num_hidden_layers, "heads": cfg.num_attention_heads,
            "kv_heads": cfg.num_key_value_heads, "intermediate": cfg.intermediate_size}
    all_ids = code_ids(runtime, max(contexts))
    inserts = (runtime.encode(TOP_TEXT), runtime.encode(TYPED_TEXT))
    points: list[Point] = []
    with torch.inference_mode():
        for n in contexts:
            point = Point(size, n)
            est = estimate_s(points, n)
            if est is not None and est > args.max_point_s:
                point.skipped = f"skipped (estimated {est:.0f} s > --max-point-s {args.max_point_s:.0f})"
            else:
                bar.set_postfix_str(f"{size} at {n} tokens")
                measure(runtime, all_ids[:n], inserts, args, point)
            points.append(point)
            bar.update(1)
    del runtime
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
    return info, points


# ---------------------------------------------------------------- output
def table(infos: dict, points: list[Point]) -> str:
    """The markdown table of every point."""
    head = ("| size | params | threads | context | cold prefill (ms) | top edit full (ms) "
            "| top edit pie (ms) | pie / full | cursor full (ms) | cursor pie (ms) | pie / full "
            "| decode (ms/token) | tree 1 row (ms) | 4 rows (x) | 16 rows (x) | 64 rows (x) |")
    lines = [head, "|" + "---|" * head.count(" | ") + "---|"]
    for p in points:
        info = infos[p.size]
        lead = f"| {p.size} | {info['params'] / 1e6:.2f} M | {info['threads']} | {p.context} "
        if p.skipped:
            lines.append(lead + f"| {p.skipped} |" + " |" * 11)
            continue
        e, t = p.edit_ms, p.tree_ms
        lines.append(
            lead + f"| {p.cold_prefill_ms:.0f} | {e['top/full']:.1f} | {e['top/pie']:.1f} "
            f"| {e['top/pie'] / e['top/full']:.3f} | {e['cursor/full']:.1f} "
            f"| {e['cursor/pie']:.1f} | {e['cursor/pie'] / e['cursor/full']:.2f} "
            f"| {p.decode_ms:.2f} | {t[1]:.2f} | {t[4] / t[1]:.2f} | {t[16] / t[1]:.2f} "
            f"| {t[64] / t[1]:.2f} |")
    return "\n".join(lines)


def plot(points: list[Point], path: str, title: str) -> None:
    """Four panels against context (log x): the two edits' first-token ms in ``full``
    and ``pie`` (log-log), decoding ms per token, and the 16- and 64-row tree forwards
    over one row."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker
    fig, axes = plt.subplots(2, 2, figsize=(12, 9))
    sizes = list(dict.fromkeys(p.size for p in points))
    colors = dict(zip(sizes, plt.rcParams["axes.prop_cycle"].by_key()["color"]))
    for size in sizes:
        ps = [p for p in points if p.size == size and not p.skipped]
        x, c = [p.context for p in ps], colors[size]
        for ax, edit in zip(axes[0], EDITS):
            for mode, style in zip(MODES, ("-o", "--s")):
                ax.plot(x, [p.edit_ms[f"{edit}/{mode}"] for p in ps], style, color=c,
                        label=f"{size} {mode}")
        axes[1][0].plot(x, [p.decode_ms for p in ps], "-o", color=c, label=size)
        for rows, style in ((16, "-o"), (64, "--s")):
            axes[1][1].plot(x, [p.tree_ms[rows] / p.tree_ms[1] for p in ps], style, color=c,
                            label=f"{size}, {rows} rows")
    labels = (("edit near the top (4 tokens at 5%): ms to the first token", True),
              ("typing at the cursor (2 tokens, 8 before the end): ms to the first token", True),
              ("greedy decoding: ms per token", True),
              ("draft-tree forward: ms of n rows / ms of 1 row", False))
    contexts = sorted({p.context for p in points})
    plain = matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}")
    for ax, (label, logy) in zip(axes.flat, labels):
        ax.set_xscale("log", base=2)
        ax.set_xticks(contexts, [f"{n // 1024}k" for n in contexts])
        ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
        if logy:
            ax.set_yscale("log")
            ax.yaxis.set_major_locator(matplotlib.ticker.LogLocator(subs=(1, 2, 5)))
            ax.yaxis.set_major_formatter(plain)
            ax.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.set_title(label, fontsize=10)
        ax.set_xlabel("context (tokens)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def parse_list(text: str, names: dict, flag: str) -> list[str]:
    out = [s.strip().lower() for s in text.split(",") if s.strip()]
    bad = [s for s in out if s not in names]
    if bad:
        raise SystemExit(f"{flag}: unknown {', '.join(bad)} (choose from {', '.join(names)})")
    return out


def merged(path: str, infos: dict, points: list[Point]) -> tuple[dict, list[Point]]:
    """The sizes measured now, with the other sizes of the earlier run in ``path``."""
    old = json.loads(Path(path).read_text())
    keep = [Point(**{**q, "tree_ms": {int(k): v for k, v in q["tree_ms"].items()}})
            for q in old["points"] if q["size"] not in infos]
    infos = {**{k: v for k, v in old["models"].items() if k not in infos}, **infos}
    order = list(SHAPES)
    return ({k: infos[k] for k in sorted(infos, key=order.index)},
            sorted(keep + points, key=lambda q: (order.index(q.size), q.context)))


def describe(info: dict) -> str:
    run = (f"; measured {info['started']} in {info['minutes']:.1f} min, load average "
           f"{info['load'][0]:.2f} before, {info['load'][1]:.2f} after" if "load" in info else "")
    return (f"{info['size']}: {info['params']:,} parameters (hidden {info['hidden']}, "
            f"{info['layers']} layers, {info['heads']} heads / {info['kv_heads']} kv heads, "
            f"mlp {info['intermediate']}), {info['threads']} threads, {info['forward']} "
            f"forward{run}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default=",".join(SHAPES), help="of " + ", ".join(SHAPES))
    ap.add_argument("--contexts", default=",".join(CONTEXTS), help="of " + ", ".join(CONTEXTS))
    ap.add_argument("--reps", type=int, default=5, help="repetitions of each measurement")
    ap.add_argument("--budget", type=float, default=20.0,
                    help="seconds after which a measurement stops repeating")
    ap.add_argument("--max-point-s", type=float, default=900.0,
                    help="skip a point whose estimated cost passes this many seconds")
    ap.add_argument("--threads", type=int, default=0,
                    help="torch CPU threads (0: the runtime's choice, 1 under 100 M "
                    "parameters, every core above)")
    ap.add_argument("--device", default="auto")
    ap.add_argument("--dtype", default="auto", help="auto: float32 on a CPU, bfloat16 on a GPU")
    ap.add_argument("--json", help="write every point here")
    ap.add_argument("--update", action="store_true",
                    help="keep the other sizes of the earlier run in --json (this run's sizes "
                    "replace theirs); the table and plot show them all")
    ap.add_argument("--plot", help="write the curve here (PNG)")
    args = ap.parse_args()
    sizes = parse_list(args.sizes, SHAPES, "--sizes")
    contexts = [CONTEXTS[c] for c in parse_list(args.contexts, CONTEXTS, "--contexts")]
    if args.update and not (args.json and Path(args.json).is_file()):
        ap.error("--update needs --json naming an earlier run's file")
    from tqdm import tqdm
    infos, points = {}, []
    with tqdm(total=len(sizes) * len(contexts), file=sys.stderr, unit="point") as bar:
        for size in sizes:
            t0, load0 = time.perf_counter(), os.getloadavg()[0]
            started = time.strftime("%Y-%m-%d %H:%M")
            info, pts = run_size(size, contexts, args, bar)
            info.update(started=started, minutes=(time.perf_counter() - t0) / 60,
                        load=[load0, os.getloadavg()[0]])
            infos[size] = info
            points += pts
    if args.update:
        infos, points = merged(args.json, infos, points)
    device = "cuda" if args.device == "auto" and torch.cuda.is_available() else args.device
    device = torch.cuda.get_device_name() if device.startswith("cuda") else \
        f"cpu, {os.cpu_count()} cores"
    print(f"device {device}, torch {torch.__version__}, dtype {args.dtype}, reps {args.reps} "
          f"(budget {args.budget:.0f} s a measurement)")
    for info in infos.values():
        print(describe(info))
    print()
    print(table(infos, points))
    if args.json:
        Path(args.json).write_text(json.dumps({"models": infos, "points": [asdict(p) for p in points],
                                               "args": vars(args)}, indent=2) + "\n")
    if args.plot:
        plot(points, args.plot, f"inkling cost curve, random-weight Llama models, {device}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
