"""transformers' own forward behind ``Forward``: any family's, the others' test reference."""
from __future__ import annotations

import inspect

import torch

from inkling.runtime.llama_modules import transformers_model


class ReferenceForward:
    name = "reference"

    def __init__(self, model: torch.nn.Module):
        self.held = model                           # the runtime's model
        self.model = transformers_model(model)     # transformers' own over its weights
        self.embed = model.get_input_embeddings()
        self.keyword = cache_keyword(model)
        self.window, self.hybrid = sliding_window(model.config)

    @property
    def device(self) -> torch.device:
        return self.embed.weight.device

    def new_store(self):
        from inkling.runtime.dynamic_kv import DynamicKV   # lazy: slow to import, off the start
        return DynamicKV(self.model.config)

    def forward(self, kv, embeds: torch.Tensor, positions: torch.Tensor,
                mask: torch.Tensor | None = None, keep: int = 0) -> torch.Tensor:
        """As ``Forward.forward``: logits [1, keep or n, vocab]; ``kv`` records the positions."""
        masks = self._masks(kv, positions, mask, embeds.dtype)
        logits = self.model(inputs_embeds=embeds, **{self.keyword: kv}, position_ids=positions,
                            attention_mask=masks, use_cache=True, logits_to_keep=keep).logits
        kv.record(positions)
        return logits

    def _masks(self, kv, positions: torch.Tensor, mask: torch.Tensor | None,
               dtype: torch.dtype):
        """``mask`` as given where no key can be a window behind a row, else with the window
        applied by position (per layer type where the model mixes full and sliding layers)."""
        if self.window is None or kv.length + positions.shape[-1] <= self.window:
            return mask
        full = causal_mask(kv.length, positions.shape[-1], dtype, positions.device) \
            if mask is None else mask
        keys = torch.cat((kv.positions.to(positions.device), positions[0]))       # [L]
        far = positions[0][:, None] - keys[None, :] >= self.window                # [n, L]
        windowed = full.masked_fill(far[None, None], torch.finfo(full.dtype).min)
        return {"full_attention": full, "sliding_attention": windowed} if self.hybrid \
            else windowed

    def picks_threads(self, rows: int) -> bool:
        return False


def causal_mask(past: int, n: int, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """The additive mask [1, 1, n, past + n] of ``n`` rows after ``past`` cached entries."""
    sees = torch.ones(n, past + n, dtype=torch.bool, device=device).tril(past)
    return torch.zeros(sees.shape, dtype=dtype, device=device).masked_fill(
        ~sees, torch.finfo(dtype).min)[None, None]


def sliding_window(config) -> tuple[int | None, bool]:
    """(the window of ``config``'s sliding layers or None, whether full layers run beside them)."""
    window = getattr(config, "sliding_window", None)
    types = set(getattr(config, "layer_types", None) or ())
    if window is None or (types and "sliding_attention" not in types):
        return None, False
    return int(window), "full_attention" in types


def cache_keyword(model) -> str:
    """``model``'s cache argument: ``cache`` from transformers 5.24 on, else ``past_key_values``."""
    return "cache" if "cache" in inspect.signature(model.forward).parameters \
        else "past_key_values"
