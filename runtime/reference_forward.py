"""transformers' own forward behind ``Forward``: any family's, the others' test reference."""
from __future__ import annotations

import inspect

import torch


class ReferenceForward:
    name = "reference"

    def __init__(self, model: torch.nn.Module):
        self.model = model
        self.embed = model.get_input_embeddings()
        self.keyword = cache_keyword(model)

    @property
    def device(self) -> torch.device:
        return self.embed.weight.device

    def new_store(self):
        from inkling.runtime.dynamic_kv import DynamicKV   # lazy: slow to import, off the start
        return DynamicKV(self.model.config)

    def forward(self, kv, embeds: torch.Tensor, positions: torch.Tensor,
                mask: torch.Tensor | None = None, keep: int = 0) -> torch.Tensor:
        """As ``Forward.forward``: logits [1, keep or n, vocab]."""
        return self.model(inputs_embeds=embeds, **{self.keyword: kv}, position_ids=positions,
                          attention_mask=mask, use_cache=True, logits_to_keep=keep).logits

    def picks_threads(self, rows: int) -> bool:
        return False


def cache_keyword(model) -> str:
    """``model``'s cache argument: ``cache`` from transformers 5.24 on, else ``past_key_values``."""
    return "cache" if "cache" in inspect.signature(model.forward).parameters \
        else "past_key_values"
