"""Where a decoding forward's time goes, against the floors this CPU sets (issue 24).

    python benchmarks/forward_bound.py [--model PATH] [--context 900] [--rounds 40]
                                       [--threads 1,2]

For a forward of n rows after ``--context`` cached tokens (n = 1: a decoding step; more:
a verified draft tree, a chain here), rounds alternating between the parts, median ms of:

- **forward**: the compact forward as decoding runs it (``PromptCache.extend`` for one
  row, ``extend_tree`` for more: the tree mask built, the cache written);
- **linear**: the same products alone, back to back (every layer's q, k, v, o, gate, up
  and down and the output layer, on n rows of the model's own weights, as the forward
  calls them): what the weights cost to stream and multiply in torch's kernels;
- **attention**: the layers' scaled-dot-product attention calls alone, with the
  forward's shapes (and, for a tree, its mask);
- **rest**: forward - linear - attention (norms, rotary, residuals, the mask, the cache
  writes, Python between ops).

Then the floors: the weights' bytes read once (a sum over each weight tensor, on the same
core), the linear layers' multiply-adds a second at each n, and the extra ms each row
past the first costs. Run it with the machine quiet (``runs/quiet.sh`` pauses the
training); ``--threads 1,2`` measures each part with torch's intra-op threads at 1, then 2.
"""
from __future__ import annotations

import argparse
import statistics
import time

import torch
from torch.nn import functional as F

from inkling.runtime.model_loader import load_runtime
from inkling.cache.prompt_cache import PromptCache
from inkling.models import BUNDLED_MODEL_DIR

ROWS = (1, 2, 4, 8, 16, 32)


def clocked(fn, reps: int) -> float:
    """Median ms of ``reps`` calls."""
    ms = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        ms.append((time.perf_counter() - t0) * 1000)
    return statistics.median(ms)


def linear_parts(compact, n: int):
    """The forward's products on n rows, alone: (a function running them, multiply-adds)."""
    cfg = compact.config
    h, m = torch.randn(n, cfg.hidden_size), torch.randn(n, cfg.intermediate_size)
    o = torch.randn(n, compact.heads * compact.head_dim)

    def run() -> None:
        for layer in compact.layers:
            layer.q(h), layer.k(h), layer.v(h), layer.o(o), layer.gate(h), layer.up(h)
            layer.down(m)
        compact.head(h)
    return run


def weight_tensors(compact) -> list[torch.Tensor]:
    """Every weight the forward multiplies by (dense; a packed output layer unpacked)."""
    layers = compact.model.model.layers
    linears = [lin for layer in layers for lin in (
        layer.self_attn.q_proj, layer.self_attn.k_proj, layer.self_attn.v_proj,
        layer.self_attn.o_proj, layer.mlp.gate_proj, layer.mlp.up_proj, layer.mlp.down_proj)]
    linears.append(compact.model.lm_head)
    return [lin.weight_t if hasattr(lin, "weight_t") else lin.weight
            for lin in linears]


def attention_parts(compact, n: int, past: int):
    """The forward's attention calls on n rows after ``past`` cached entries, alone."""
    H, kv, d, g = compact.heads, compact.kv_heads, compact.head_dim, compact.groups
    L = past + n
    keys, values = torch.randn(1, kv, L, d), torch.randn(1, kv, L, d)
    if n == 1:
        q = torch.randn(1, H, 1, d)

        def run() -> None:
            for _ in compact.layers:
                F.scaled_dot_product_attention(q, keys, values, scale=compact.scaling,
                                               enable_gqa=g > 1)
        return run
    q = torch.randn(1, kv, g * n, d)
    mask = torch.zeros(1, 1, g * n, L)

    def run_masked() -> None:
        for _ in compact.layers:
            F.scaled_dot_product_attention(q, keys, values, attn_mask=mask,
                                           scale=compact.scaling)
    return run_masked


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default=str(BUNDLED_MODEL_DIR))
    ap.add_argument("--context", type=int, default=900)
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--reps", type=int, default=5, help="calls timed per part and round")
    ap.add_argument("--threads", default="1")
    args = ap.parse_args()
    threads = [int(t) for t in args.threads.split(",")]
    runtime = load_runtime(args.model, device="cpu", dtype="float32")
    compact = runtime.compact
    if compact is None:
        raise SystemExit(f"no compact forward for this model: {runtime.compact_refusal}")
    context = [10 + (i * 37) % (runtime.vocab_size - 10) for i in range(args.context)]
    cache = PromptCache(runtime, "full")
    cache.extend(context, last_only=True)
    weights = weight_tensors(compact)
    nbytes = sum(w.numel() * w.element_size() for w in weights)
    macs_per_row = sum(w.numel() for w in weights)

    def forward(n: int):
        tokens, parents = [100 + i for i in range(n)], [-1] + list(range(n - 1))

        def run() -> None:
            if n == 1:
                cache.extend(tokens)
            else:
                cache.extend_tree(tokens, parents)
            cache.truncate(len(context))
        return run

    parts = {"forward": forward, "linear": lambda n: linear_parts(compact, n),
             "attention": lambda n: attention_parts(compact, n, len(context))}
    runs = {(t, p, n): parts[p](n) for t in threads for p in parts for n in ROWS}
    stream = lambda: [w.sum() for w in weights]                      # noqa: E731
    ms: dict = {key: [] for key in list(runs) + [(t, "stream", 0) for t in threads]}
    with torch.inference_mode():
        for key, fn in runs.items():                                   # warm up
            with runtime.threads.pinned(key[0]):   # the runtime's choice held at the count
                torch.set_num_threads(key[0])      # (and torch's, for the parts outside it)
                fn()
        for r in range(args.rounds):
            for t in threads if r % 2 else threads[::-1]:
                with runtime.threads.pinned(t):
                    torch.set_num_threads(t)
                    ms[t, "stream", 0].append(clocked(stream, args.reps))
                    for n in ROWS:
                        for p in parts if r % 2 else list(parts)[::-1]:
                            ms[t, p, n].append(clocked(runs[t, p, n], args.reps))
    med = {k: statistics.median(v) for k, v in ms.items()}
    cfg = compact.config
    print(f"model {runtime.path.name}: {cfg.num_hidden_layers} layers, hidden "
          f"{cfg.hidden_size}, vocab {cfg.vocab_size}; {len(weights)} weight matrices, "
          f"{nbytes / 2**20:.1f} MiB float32, {macs_per_row / 1e6:.2f} M multiply-adds a row; "
          f"{args.context} cached tokens; {args.rounds} rounds x {args.reps} calls")
    for t in threads:
        s = med[t, "stream", 0]
        print(f"\n{t} thread(s). Reading every weight once (a sum over each tensor): "
              f"{s:.2f} ms ({nbytes / s / 1e6:.1f} GB/s)")
        print(f"{'rows':>4} {'forward':>8} {'linear':>7} {'attention':>9} {'rest':>6} "
              f"{'linear GMAC/s':>13} {'forward ms/row':>14} {'+ms per row past 1':>18}")
        one = med[t, "forward", 1]
        for n in ROWS:
            f, lin, att = (med[t, p, n] for p in ("forward", "linear", "attention"))
            extra = (f - one) / (n - 1) if n > 1 else float("nan")
            print(f"{n:>4} {f:>8.2f} {lin:>7.2f} {att:>9.2f} {f - lin - att:>6.2f} "
                  f"{macs_per_row * n / lin / 1e6:>13.1f} {f / n:>14.3f} {extra:>18.3f}")
        lin1 = med[t, "linear", 1]
        print(f"one row: the linear layers stream {nbytes / lin1 / 1e6:.1f} GB/s of weights "
              f"({lin1 / s:.2f} x the plain read); the forward is {one / lin1:.2f} x its "
              f"products alone")


if __name__ == "__main__":
    main()
