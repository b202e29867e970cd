"""A compact forward for the Llama family over the weights transformers loaded.
transformers' ops in the same order without its per-step overhead, keys and values in a preallocated
KVBuffers, so the logits match to float rounding; :func:`refusal` names the models it cannot run."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch
from torch.nn import functional as F

from inkling.runtime.cpu_layout import InputMajorLinear
from inkling.runtime.kv_buffers import KVBuffers
from inkling.runtime.rotary import RopeTable, signed_rope, static_rope

Projection = Callable[[torch.Tensor], torch.Tensor]

FAMILIES = ("llama", "mistral", "qwen2")


def refusal(model: torch.nn.Module) -> str | None:
    """Why ``model`` cannot run the compact forward, or None when it can."""
    config = model.config
    kind = getattr(config, "model_type", "?")
    if kind not in FAMILIES:
        return f"model type {kind!r} is not one of {', '.join(FAMILIES)}"
    if getattr(config, "hidden_act", "silu") != "silu":
        return f"activation {config.hidden_act!r} (the compact forward has SiLU only)"
    if kind == "mistral" and getattr(config, "sliding_window", None) is not None:
        return "a sliding attention window"
    if "sliding_attention" in (getattr(config, "layer_types", None) or ()):
        return "sliding attention layers"
    if getattr(config, "mlp_bias", False):
        return "MLP biases"
    try:
        body = model.model
        body.layers[0].self_attn.q_proj, body.rotary_emb, body.embed_tokens, body.norm
        model.lm_head
    except AttributeError as exc:
        return f"an unexpected module layout ({exc})"
    return None


@dataclass(frozen=True)
class _Layer:
    """One decoder layer: its norms and projections [n, in] -> [n, out] over the model's weights."""
    in_norm: torch.nn.Module
    q: Projection
    k: Projection
    v: Projection
    o: Projection
    post_norm: torch.nn.Module
    gate: Projection
    up: Projection
    down: Projection

    @classmethod
    def of(cls, block: torch.nn.Module) -> "_Layer":
        a, m = block.self_attn, block.mlp
        return cls(block.input_layernorm, *map(_projection, (a.q_proj, a.k_proj, a.v_proj,
                                                             a.o_proj)),
                   block.post_attention_layernorm,
                   *map(_projection, (m.gate_proj, m.up_proj, m.down_proj)))


def _projection(linear: torch.nn.Module) -> Projection:
    """``linear`` on 2-D rows: one ``mm`` (and a bias add) where its weight is held [in, out]."""
    if not isinstance(linear, InputMajorLinear):
        return linear.forward
    weight_t, bias = linear.weight_t, linear.bias
    if bias is None:
        return lambda x: torch.mm(x, weight_t)
    return lambda x: torch.mm(x, weight_t) + bias


class CompactLlama:
    """``forward(kv, embeds, positions, mask, keep)`` -> logits; a ``Forward`` over KVBuffers."""

    name = "compact"

    def __init__(self, model: torch.nn.Module):
        why = refusal(model)
        if why is not None:
            raise ValueError(f"{type(model).__name__}: no compact forward: {why}")
        config, body = model.config, model.model
        self.model = model                  # the model whose weights this forward runs
        self.config = config
        self.heads = config.num_attention_heads
        self.kv_heads = getattr(config, "num_key_value_heads", None) or self.heads
        self.groups = self.heads // self.kv_heads
        self.head_dim = getattr(config, "head_dim", None) or config.hidden_size // self.heads
        self.scaling = body.layers[0].self_attn.scaling
        self.embed = body.embed_tokens
        self.rotary = body.rotary_emb
        self.norm = body.norm               # its weight says the model's dtype and device
        self.dtype = self.norm.weight.dtype
        self.rope_table = RopeTable(self.rotary, self.dtype) if static_rope(config) else None
        self.head = _projection(model.lm_head)
        self.layers = [_Layer.of(block) for block in body.layers]

    @property
    def device(self) -> torch.device:
        return self.norm.weight.device

    def new_buffers(self, dtype: torch.dtype, device: torch.device) -> KVBuffers:
        return KVBuffers.for_config(self.config, dtype, device)

    def new_store(self) -> KVBuffers:
        """An empty store in the model's dtype, on its device."""
        return self.new_buffers(self.dtype, self.device)

    def picks_threads(self, rows: int) -> bool:
        return False

    def rope(self, embeds: torch.Tensor, positions: torch.Tensor
             ) -> tuple[torch.Tensor, torch.Tensor]:
        """cos, sin' [n, d] at ``positions`` [1, n] (sin's first half negated), from the table."""
        if self.rope_table is not None and embeds.dtype == self.rope_table.dtype:
            return self.rope_table.rows(positions[0])
        cos, sin = signed_rope(*self.rotary(embeds, position_ids=positions))  # [1, 1, n, d]
        return cos[0, 0], sin[0, 0]

    @torch.inference_mode()
    def forward(self, kv: KVBuffers, embeds: torch.Tensor, positions: torch.Tensor,
                mask: torch.Tensor | None = None, keep: int = 0) -> torch.Tensor:
        """embeds [1, n, hidden] at ``positions`` [1, n] -> logits [1, keep or n, vocab].
        ``mask``: None (causal) or [1, 1, n, length + n], additive or bool; ``kv`` gets the rows."""
        n, past = embeds.shape[1], kv.length
        kv.reserve(n)
        cos, sin = self.rope(embeds, positions)                            # [n, d] each
        rope = cos[None, None], sin[None, None]                          # [1, 1, n, d] each
        attend = self._attention_mask(mask, n, past, embeds.device)
        stores = (kv.keys.unbind(0), kv.values.unbind(0))                # [1, kv, cap, d] each
        x = embeds[0]                                                     # [n, hidden]
        for i, layer in enumerate(self.layers):
            store = (stores[0][i], stores[1][i])
            x = x + self._attention(layer, _rms(layer.in_norm, x), rope, attend, store, past)
            h = _rms(layer.post_norm, x)
            x = x + layer.down(F.silu(layer.gate(h)) * layer.up(h))
        kv.length = past + n
        x = _rms(self.norm, x if keep == 0 else x[-keep:])
        return self.head(x)[None]                                         # [1, keep, vocab]

    def _attention_mask(self, mask: torch.Tensor | None, n: int, past: int,
                        device: torch.device) -> torch.Tensor | None:
        """None where SDPA runs unmasked, else the packed rows' [1, 1, g * n, L] mask."""
        if mask is None and (n == 1 or past == 0):
            return None
        if mask is None:                                  # causal after the cache, as bool
            cols = torch.arange(past + n, device=device)                  # [L]
            rows = torch.arange(past, past + n, device=device)            # [n]
            mask = (cols[None, :] <= rows[:, None])[None, None]           # [1, 1, n, L]
        if n == 1 or self.groups == 1:
            return mask
        return torch.cat([mask] * self.groups, dim=2)                     # [1, 1, g * n, L]

    def _attention(self, layer: _Layer, x: torch.Tensor, rope, attend, store,
                   past: int) -> torch.Tensor:
        """x [n, hidden] -> [n, hidden]; writes the new keys / values into ``store`` at ``past``."""
        b, n = 1, x.shape[0]
        cos, sin = rope                                                    # [1, 1, n, d]
        q = layer.q(x).view(b, n, -1, self.head_dim).transpose(1, 2)      # [1, H, n, d]
        k = layer.k(x).view(b, n, -1, self.head_dim).transpose(1, 2)      # [1, kv, n, d]
        v = layer.v(x).view(b, n, -1, self.head_dim).transpose(1, 2)
        half = self.head_dim // 2
        q = q * cos + q.roll(half, -1) * sin
        k = k * cos + k.roll(half, -1) * sin
        end = past + n
        store[0][:, :, past:end].copy_(k)
        store[1][:, :, past:end].copy_(v)
        keys, values = store[0][:, :, :end], store[1][:, :, :end]         # [1, kv, L, d]
        if attend is None:
            out = F.scaled_dot_product_attention(q, keys, values, is_causal=n > 1,
                                                 scale=self.scaling,
                                                 enable_gqa=self.groups > 1)   # [1, H, n, d]
        else:
            packed = q.reshape(b, self.kv_heads, self.groups * n, self.head_dim)
            out = F.scaled_dot_product_attention(packed, keys, values, attn_mask=attend,
                                                 scale=self.scaling)  # [1, kv, g * n, d]
        out = out.reshape(b, self.heads, n, self.head_dim).transpose(1, 2).contiguous()
        return layer.o(out.view(n, -1))


def _rms(norm: torch.nn.Module, x: torch.Tensor) -> torch.Tensor:
    """transformers' Llama / Qwen2 RMSNorm, op for op (float32 inside)."""
    dtype = x.dtype
    h = x if dtype == torch.float32 else x.to(torch.float32)
    h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + norm.variance_epsilon)
    return norm.weight * (h if dtype == torch.float32 else h.to(dtype))
