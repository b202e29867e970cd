"""Does ``torch.compile`` make a one-row decoding step faster on this CPU? (issue 24)

    python benchmarks/compiled_step.py [--context 900] [--rounds 200] [--freezing]

The step is the compact forward's one-row decode written as one function of tensors
(``step``: every layer's norm, q/k/v, rotary, cache write, attention, o, MLP; the output
layer), with the cache as fixed-capacity buffers and the row's position a tensor, so that
``torch.compile`` sees one static graph (no recompiles as the cache grows: attention runs
over the whole capacity with a mask). Timed, alternating, median ms of:

- **compact forward**: ``PromptCache.extend`` of one token, as decoding runs it;
- **eager step**: ``step`` run by PyTorch op by op;
- **compiled step**: ``torch.compile(step, fullgraph=True)`` (inductor; ``--freezing``
  sets ``torch._inductor.config.freezing``, which folds the weights into the graph and
  lets it prepack them).

Also printed: the compile time and the largest logit difference between the compiled and
the eager step. Run it with the machine quiet (``runs/quiet.sh``); one forward thread.
"""
from __future__ import annotations

import argparse
import statistics
import time

import torch
from torch.nn import functional as F

from inkling.runtime.rotary import signed_rope
from inkling.runtime.model_loader import load_runtime
from inkling.cache.prompt_cache import PromptCache
from inkling.models import BUNDLED_MODEL_DIR


def weight_t(linear: torch.nn.Module) -> torch.Tensor:
    """[in, out]: the CPU layout's own, else the transposed weight."""
    return linear.weight_t if hasattr(linear, "weight_t") else linear.weight.t()


def step_function(compact, capacity: int):
    """``step(x, cos, sin, keys, values, pos)`` -> logits [1, vocab]: x [1, hidden] the row's
    embedding, cos / sin [1, 1, 1, d] its rotary factors (sin's first half negated, as
    ``signed_rope`` gives them), keys / values [layers, 1, kv, capacity, d] the cache, pos a
    0-dim long tensor (the row's position, the cache's length before it)."""
    heads, kv_heads, d = compact.heads, compact.kv_heads, compact.head_dim
    blocks = compact.model.model.layers
    weights = [(weight_t(b.self_attn.q_proj), weight_t(b.self_attn.k_proj),
                weight_t(b.self_attn.v_proj), weight_t(b.self_attn.o_proj),
                weight_t(b.mlp.gate_proj), weight_t(b.mlp.up_proj), weight_t(b.mlp.down_proj),
                b.input_layernorm.weight, b.post_attention_layernorm.weight) for b in blocks]
    eps = blocks[0].input_layernorm.variance_epsilon
    head, norm = weight_t(compact.model.lm_head), compact.norm.weight
    half, scale = d // 2, compact.scaling

    def rms(w: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        return w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))

    def step(x, cos, sin, keys, values, pos):
        seen = (torch.arange(capacity) <= pos)[None, None, None, :]        # [1, 1, 1, cap]
        for i, (wq, wk, wv, wo, wg, wu, wd, n1, n2) in enumerate(weights):
            h = rms(n1, x)                                                 # [1, hidden]
            q = torch.mm(h, wq).view(1, 1, heads, d).transpose(1, 2)       # [1, H, 1, d]
            k = torch.mm(h, wk).view(1, 1, kv_heads, d).transpose(1, 2)    # [1, kv, 1, d]
            v = torch.mm(h, wv).view(1, 1, kv_heads, d).transpose(1, 2)
            q = q * cos + q.roll(half, -1) * sin
            k = k * cos + k.roll(half, -1) * sin
            keys[i].index_copy_(2, pos.view(1), k)
            values[i].index_copy_(2, pos.view(1), v)
            packed = q.reshape(1, kv_heads, heads // kv_heads, d)         # [1, kv, g, d]
            out = F.scaled_dot_product_attention(packed, keys[i], values[i], attn_mask=seen,
                                                 scale=scale)              # [1, kv, g, d]
            x = x + torch.mm(out.reshape(1, heads * d), wo)
            h = rms(n2, x)
            x = x + torch.mm(F.silu(torch.mm(h, wg)) * torch.mm(h, wu), wd)
        return torch.mm(rms(norm, x), head)                                # [1, vocab]
    return step


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default=str(BUNDLED_MODEL_DIR))
    ap.add_argument("--context", type=int, default=900)
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("--freezing", action="store_true")
    args = ap.parse_args()
    runtime = load_runtime(args.model, device="cpu", dtype="float32", threads=1)
    compact = runtime.compact
    if compact is None:
        raise SystemExit(f"no compact forward for this model: {runtime.compact_refusal}")
    capacity = args.context + 124
    layers = len(compact.layers)
    shape = (layers, 1, compact.kv_heads, capacity, compact.head_dim)
    keys, values = torch.randn(shape), torch.randn(shape)
    x = torch.randn(1, compact.config.hidden_size)
    cos, sin = signed_rope(*compact.rotary(x[None], position_ids=torch.tensor([[args.context]])))
    pos = torch.tensor(args.context)
    step = step_function(compact, capacity)
    if args.freezing:
        import torch._inductor.config as inductor_config
        inductor_config.freezing = True
    compiled = torch.compile(step, fullgraph=True)
    context = [10 + (i * 37) % (runtime.vocab_size - 10) for i in range(args.context)]
    cache = PromptCache(runtime, "full")
    cache.extend(context, last_only=True)

    def forward() -> None:
        cache.extend([100])
        cache.truncate(len(context))
    parts = {"compact forward": forward,
             "eager step": lambda: step(x, cos, sin, keys, values, pos),
             "compiled step": lambda: compiled(x, cos, sin, keys, values, pos)}
    with torch.inference_mode():
        t0 = time.perf_counter()
        got = compiled(x, cos, sin, keys, values, pos)
        compile_s = time.perf_counter() - t0
        want = step(x, cos, sin, keys, values, pos)
        ms: dict[str, list[float]] = {name: [] for name in parts}
        for fn in parts.values():                                          # warm up
            for _ in range(5):
                fn()
        for _ in range(args.rounds):
            for name, fn in parts.items():
                t0 = time.perf_counter()
                fn()
                ms[name].append((time.perf_counter() - t0) * 1000)
    print(f"bundled model, one row after {args.context} cached tokens, one thread, "
          f"inductor freezing {'on' if args.freezing else 'off'}")
    print(f"compile: {compile_s:.1f} s; compiled against eager logits: largest difference "
          f"{(got - want).abs().max().item():.2e}")
    for name, values_ms in ms.items():
        print(f"{name:16} p50 {statistics.median(values_ms):.3f} ms")


if __name__ == "__main__":
    main()
