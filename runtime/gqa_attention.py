"""Grouped-query attention under a mask without repeating the keys and values.
A group's g query heads run as g * n rows of their key/value head, not ``repeat_kv``'s copies."""
from __future__ import annotations

import torch
from transformers import AttentionInterface
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, sdpa_mask

NAME = "inkling_packed_gqa"


def packed_gqa_attention(module: torch.nn.Module, query: torch.Tensor, key: torch.Tensor,
                         value: torch.Tensor, attention_mask: torch.Tensor | None,
                         **kwargs) -> tuple[torch.Tensor, None]:
    """query [b, H, n, d], key / value [b, kv, L, d], mask [b, 1, n, L] -> ([b, n, H, d], None)."""
    groups = getattr(module, "num_key_value_groups", 1)
    b, heads, n, d = query.shape
    plain = (groups == 1 or n == 1 or attention_mask is None or attention_mask.dim() != 4
             or attention_mask.shape[1] != 1 or key.shape[-1] != value.shape[-1]
             or any(kwargs.get(k) is not None for k in ("position_bias", "cache", "softcap"))
             or kwargs.get("output_attentions", False))
    if plain:
        return sdpa_attention_forward(module, query, key, value, attention_mask, **kwargs)
    kv_heads = heads // groups
    q = query.reshape(b, kv_heads, groups * n, d)                 # rows ordered (group, token)
    mask = torch.cat([attention_mask] * groups, dim=2)            # [b, 1, groups * n, L]
    out = torch.nn.functional.scaled_dot_product_attention(      # [b, kv, g * n, d]
        q, key, value, attn_mask=mask, dropout_p=kwargs.get("dropout", 0.0),
        scale=kwargs.get("scaling"))
    return out.reshape(b, heads, n, value.shape[-1]).transpose(1, 2).contiguous(), None


def use_packed_gqa(model: torch.nn.Module) -> bool:
    """Switch an SDPA ``model`` with grouped heads to the packed function; False if not."""
    config = model.config
    if getattr(config, "_attn_implementation", None) != "sdpa":
        return False
    heads = getattr(config, "num_attention_heads", None)
    kv_heads = getattr(config, "num_key_value_heads", None) or heads
    if not heads or kv_heads == heads:
        return False
    AttentionInterface.register(NAME, packed_gqa_attention)
    ALL_MASK_ATTENTION_FUNCTIONS.register(NAME, sdpa_mask)
    model.set_attn_implementation(NAME)
    return True
