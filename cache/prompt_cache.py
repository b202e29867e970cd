"""The KV cache of one document's prompt, kept in step with the token ids it encoded.

``sync(prompt_ids)`` brings the cache up to date with a new prompt and returns the
logits at its last position. This file holds the ``full`` mode: keep the common
head of the old and new ids and recompute from the first changed token.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from .runtime import ModelRuntime


@dataclass(frozen=True)
class SyncResult:
    logits: torch.Tensor      # [vocab] at the prompt's last position
    reused: int               # context tokens whose keys and values were kept
    prefilled: int            # context tokens run through the model


def common_prefix(a: list[int], b: list[int]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


class PromptCache:
    def __init__(self, runtime: ModelRuntime, prefill_chunk: int = 512):
        self.runtime = runtime
        self.ids: list[int] = []
        self.past = None
        self.prefill_chunk = prefill_chunk

    def __len__(self) -> int:
        return len(self.ids)

    def nbytes(self) -> int:
        if self.past is None:
            return 0
        return sum(t.numel() * t.element_size() for layer in self.past.layers
                   for t in (layer.keys, layer.values) if t is not None)

    def reset(self) -> None:
        self.ids, self.past = [], None

    def truncate(self, n: int) -> None:
        """Keep the first ``n`` cached tokens."""
        if n < len(self.ids):
            self.ids = self.ids[:n]
            if n == 0:
                self.past = None
                return
            for layer in self.past.layers:                 # keys, values: [b, kv_heads, seq, d]
                layer.keys = layer.keys[..., :n, :]
                layer.values = layer.values[..., :n, :]

    def sync(self, prompt_ids: list[int]) -> SyncResult:
        if not prompt_ids:
            raise ValueError("empty prompt")
        keep = min(common_prefix(self.ids, prompt_ids), len(prompt_ids) - 1)
        self.truncate(keep)
        logits = self.extend(prompt_ids[keep:])
        return SyncResult(logits[-1], reused=keep, prefilled=len(prompt_ids) - keep)

    def extend(self, ids: list[int]) -> torch.Tensor:
        """Run ``ids`` after the cached tokens: returns logits [len(ids), vocab]."""
        if self.past is None:
            from transformers import DynamicCache
            self.past = DynamicCache(config=self.runtime.model.config)
        outs = []
        for i in range(0, len(ids), self.prefill_chunk):
            chunk = ids[i:i + self.prefill_chunk]
            start = len(self.ids)
            x = torch.tensor([chunk], dtype=torch.long)                      # [1, n]
            pos = torch.arange(start, start + len(chunk), device=self.runtime.device)[None]
            outs.append(self.runtime.forward(x, self.past, position_ids=pos)[0])  # [n, vocab]
            self.ids.extend(chunk)
        return torch.cat(outs)
