"""A lean training twin of `transformers`' LlamaForCausalLM for the recipe's small model.

Same parameters under the same names (so its state dict loads into the Hugging Face
model for export, and back), same arithmetic (RMSNorm in float32, rotary embeddings with
rotate-half, grouped-query attention, SiLU-gated MLP, tied embeddings), written with
plain torch ops for training on full rows: causal `scaled_dot_product_attention` with no
mask tensor, rotary tables computed once, no cache and no output objects. The test
checks its logits and gradients against the Hugging Face model.
"""
from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x):
        dtype = x.dtype
        x = x.float()
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * x.to(dtype)


def _rotate_half(x):
    a, b = x.chunk(2, dim=-1)
    return torch.cat((-b, a), dim=-1)


class Attention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.heads, self.kv_heads = cfg.num_attention_heads, cfg.num_key_value_heads
        self.head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // self.heads
        h, d = cfg.hidden_size, self.head_dim
        self.q_proj = nn.Linear(h, self.heads * d, bias=False)
        self.k_proj = nn.Linear(h, self.kv_heads * d, bias=False)
        self.v_proj = nn.Linear(h, self.kv_heads * d, bias=False)
        self.o_proj = nn.Linear(self.heads * d, h, bias=False)

    def forward(self, x, cos, sin):
        b, t, _ = x.shape
        d = self.head_dim
        q = self.q_proj(x).view(b, t, self.heads, d).transpose(1, 2)
        k = self.k_proj(x).view(b, t, self.kv_heads, d).transpose(1, 2)
        v = self.v_proj(x).view(b, t, self.kv_heads, d).transpose(1, 2)
        q = q * cos + _rotate_half(q) * sin
        k = k * cos + _rotate_half(k) * sin
        rep = self.heads // self.kv_heads
        if rep > 1:
            k = k.repeat_interleave(rep, dim=1)
            v = v.repeat_interleave(rep, dim=1)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.o_proj(y.transpose(1, 2).reshape(b, t, self.heads * d))


class MLP(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        h, m = cfg.hidden_size, cfg.intermediate_size
        self.gate_proj = nn.Linear(h, m, bias=False)
        self.up_proj = nn.Linear(h, m, bias=False)
        self.down_proj = nn.Linear(m, h, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class Layer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.self_attn = Attention(cfg)
        self.mlp = MLP(cfg)
        self.input_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.post_attention_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)

    def forward(self, x, cos, sin):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin)
        return x + self.mlp(self.post_attention_layernorm(x))


class Body(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.embed_tokens = nn.Embedding(cfg.vocab_size, cfg.hidden_size)
        self.layers = nn.ModuleList(Layer(cfg) for _ in range(cfg.num_hidden_layers))
        self.norm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)


class LeanLlama(nn.Module):
    """``LeanLlama(config)(input_ids)`` -> logits [batch, seq, vocab] (float32)."""

    def __init__(self, cfg):
        super().__init__()
        if not getattr(cfg, "tie_word_embeddings", False):
            raise ValueError("the lean twin is written for tied embeddings")
        self.config = cfg
        self.model = Body(cfg)
        self.lm_head = nn.Linear(cfg.hidden_size, cfg.vocab_size, bias=False)
        self.lm_head.weight = self.model.embed_tokens.weight
        d = self.model.layers[0].self_attn.head_dim
        rope = getattr(cfg, "rope_parameters", None) or {}
        theta = rope.get("rope_theta", getattr(cfg, "rope_theta", 10000.0))
        self.register_buffer("inv_freq", 1.0 / (theta ** (torch.arange(0, d, 2).float() / d)),
                             persistent=False)
        self._rope = None

    def _tables(self, t: int, device):
        if self._rope is None or self._rope[0].shape[-2] < t or self._rope[0].device != device:
            pos = torch.arange(t, device=device, dtype=torch.float32)
            freqs = torch.outer(pos, self.inv_freq.to(device))
            emb = torch.cat((freqs, freqs), dim=-1)
            self._rope = (emb.cos(), emb.sin())
        cos, sin = self._rope
        return cos[:t], sin[:t]

    def hidden(self, input_ids):
        x = self.model.embed_tokens(input_ids)
        cos, sin = self._tables(input_ids.shape[1], input_ids.device)
        for layer in self.model.layers:
            x = layer(x, cos, sin)
        return self.model.norm(x)

    def forward(self, input_ids):
        return self.lm_head(self.hidden(input_ids))


def lean_from_hf(hf_model) -> LeanLlama:
    lean = LeanLlama(hf_model.config)
    missing, unexpected = lean.load_state_dict(hf_model.state_dict(), strict=False)
    bad = [k for k in missing if k != "lm_head.weight"] + list(unexpected)
    if bad:
        raise ValueError(f"the lean twin does not match the model's parameters: {bad[:5]}")
    return lean.to(next(hf_model.parameters()).device, next(hf_model.parameters()).dtype)
