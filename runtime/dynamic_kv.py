"""transformers' ``DynamicCache`` with KVBuffers' operations, for the reference forward.
Every layer holds every entry, a sliding window's layers too (transformers' would drop the
oldest and count what it dropped, so an edit by index would miss them): the window is the
mask's (``reference_forward.py``), over ``positions``, each entry's position."""
from __future__ import annotations

from typing import Callable

import torch
from transformers import DynamicCache
from transformers.cache_utils import DynamicLayer

Rotate = Callable[[torch.Tensor, int], torch.Tensor]


class DynamicKV(DynamicCache):
    def __init__(self, config):
        super().__init__(config=config)
        self.model_config = config
        self.layers = [DynamicLayer() if getattr(layer, "is_sliding", False) else layer
                       for layer in self.layers]
        self.positions = torch.zeros(0, dtype=torch.long)            # [length], on the CPU

    @property
    def length(self) -> int:
        return self.get_seq_length()

    def lengths(self) -> set[int]:
        """The entries each layer holds and the positions recorded: one value when in step."""
        return {len(self.positions)} | {layer.keys.shape[-2] for layer in self.layers
                                        if layer.keys is not None}

    def record(self, positions: torch.Tensor) -> None:
        """The positions [n] of the entries a forward appended."""
        self.positions = torch.cat((self.positions, positions.reshape(-1).cpu()))

    def nbytes(self) -> int:
        return sum(t.numel() * t.element_size() for layer in self.layers
                   for t in (layer.keys, layer.values) if t is not None)

    def empty_like(self) -> "DynamicKV":
        out = DynamicKV(self.model_config)
        for layer, src in zip(out.layers, self.layers):
            layer.lazy_initialization(src.keys, src.values)
            layer.keys, layer.values = src.keys[..., :0, :], src.values[..., :0, :]
        return out

    def reserve(self, extra: int) -> None:
        """Nothing to do: transformers concatenates on every forward."""

    def truncate(self, n: int) -> None:
        if n >= self.length:
            return
        for layer in self.layers:                          # [1, kv_heads, seq, d]
            layer.keys = layer.keys[..., :n, :]
            layer.values = layer.values[..., :n, :]
        self.positions = self.positions[:n]

    def gather(self, index: torch.Tensor, holes: torch.Tensor, start: int = 0) -> None:
        for layer in self.layers:                    # ``start`` unused: each layer rebuilt whole
            layer.keys = layer.keys.index_select(-2, index).index_fill_(-2, holes, 0)
            layer.values = layer.values.index_select(-2, index).index_fill_(-2, holes, 0)
        self.positions = self.positions.index_select(0, index.cpu()).index_fill_(0, holes.cpu(), 0)

    def rotate(self, start: int, end: int, delta: int, rotate: Rotate) -> None:
        for layer in self.layers:
            keys = layer.keys[..., start:end, :]
            keys.copy_(rotate(keys, delta))
        self.positions[start:end] += delta

    def fill_holes(self, holes: torch.Tensor, n: int) -> None:
        for layer in self.layers:          # [b, kv_heads, n + m, d] -> [b, kv_heads, n, d]
            layer.keys = layer.keys.index_copy_(-2, holes, layer.keys[..., n:, :])[..., :n, :]
            layer.values = layer.values.index_copy_(-2, holes,
                                                    layer.values[..., n:, :])[..., :n, :]
        moved = self.positions[n:].clone()
        self.positions = self.positions.index_copy_(0, holes.cpu(), moved)[:n]

    def keep(self, start: int, offsets: torch.Tensor) -> None:
        end = start + len(offsets)
        index = offsets + start
        for layer in self.layers:
            layer.keys[..., start:end, :] = layer.keys.index_select(-2, index)
            layer.values[..., start:end, :] = layer.values.index_select(-2, index)
        self.positions[start:end] = self.positions.index_select(0, index.cpu())
        self.truncate(end)

    def select(self, entries: torch.Tensor) -> "DynamicKV":
        out = DynamicKV(self.model_config)
        for layer, src in zip(out.layers, self.layers):
            keys, values = src.keys.index_select(-2, entries), src.values.index_select(-2, entries)
            layer.lazy_initialization(keys, values)
            layer.keys, layer.values = keys, values
        out.positions = self.positions.index_select(0, entries.cpu())
        return out

    def append_from(self, other: "DynamicKV", start: int, end: int, delta: int,
                    rotate: Rotate | None) -> None:
        delta = delta if rotate is not None else 0         # an entry's position: its rotation's
        for layer, src in zip(self.layers, other.layers):
            keys = src.keys[..., start:end, :]
            if delta:
                keys = rotate(keys, delta)
            layer.keys = torch.cat((layer.keys, keys), dim=-2)
            layer.values = torch.cat((layer.values, src.values[..., start:end, :]), dim=-2)
        self.positions = torch.cat((self.positions, other.positions[start:end] + delta))
