"""Grouped-query attention under a mask without repeating the keys and values.

transformers' SDPA path runs a masked forward of several query tokens on a GQA model
(a draft tree, k branches, a spliced edit) by first copying every cached key and value
``num_key_value_groups`` times (``repeat_kv``): with 900 cached tokens that copy is
most of what the extra rows of a verification forward cost on a CPU. Only a single
query token is spared it (``pack_gqa``). This module generalises that packing to n
query tokens: the g query heads that share a key/value head are laid out as g * n
rows of that head, the mask is repeated g times along its rows, and SDPA runs over
the key/value heads as they are cached. The arithmetic is the same per row; nothing
is approximated.

``use_packed_gqa(model)`` registers the function with transformers (once, under
:data:`NAME`, with SDPA's mask builder) and switches the model to it; every other
case (one query token, no mask, per-head masks, paged caches, position biases) is
handed to transformers' own SDPA function unchanged.
"""
from __future__ import annotations

import torch
from transformers import AttentionInterface
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, sdpa_mask

NAME = "inkling_packed_gqa"


def packed_gqa_attention(module: torch.nn.Module, query: torch.Tensor, key: torch.Tensor,
                         value: torch.Tensor, attention_mask: torch.Tensor | None,
                         **kwargs) -> tuple[torch.Tensor, None]:
    """query [b, heads, n, d], key / value [b, kv_heads, L, d], attention_mask
    [b, 1, n, L] -> ([b, n, heads, d], None), as transformers' attention functions;
    ``kwargs`` as transformers passes them (``dropout``, ``scaling``, ``is_causal``, ...)."""
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
    """Switch ``model`` (loaded with ``attn_implementation="sdpa"``) to the packed
    function; returns False, leaving the model as it is, when it is not on SDPA or has
    no grouped heads."""
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
