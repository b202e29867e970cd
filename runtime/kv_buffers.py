"""Preallocated keys and values of one document, ``[layers, 1, kv_heads, capacity, head_dim]``.
The first ``length`` positions are the cache; forwards write after them in place, edits are index
operations over all layers, and capacity doubles. A store's type says which forward writes it."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch

CAPACITY_STEP = 256
Rotate = Callable[[torch.Tensor, int], torch.Tensor]


@dataclass(frozen=True)
class LayerView:
    keys: torch.Tensor          # [1, kv_heads, length, head_dim]
    values: torch.Tensor


class KVBuffers:
    def __init__(self, layers: int, kv_heads: int, head_dim: int, dtype: torch.dtype,
                 device: torch.device, capacity: int = CAPACITY_STEP):
        shape = (layers, 1, kv_heads, _rounded(capacity), head_dim)
        self.keys = torch.zeros(shape, dtype=dtype, device=device)      # [L, 1, kv, cap, d]
        self.values = torch.zeros(shape, dtype=dtype, device=device)
        self.length = 0

    @classmethod
    def for_config(cls, config, dtype: torch.dtype, device: torch.device,
                   capacity: int = CAPACITY_STEP) -> "KVBuffers":
        heads = config.num_attention_heads
        head_dim = getattr(config, "head_dim", None) or config.hidden_size // heads
        kv_heads = getattr(config, "num_key_value_heads", None) or heads
        return cls(config.num_hidden_layers, kv_heads, head_dim, dtype, device, capacity)

    @property
    def capacity(self) -> int:
        return self.keys.shape[3]

    def get_seq_length(self) -> int:
        return self.length

    def lengths(self) -> set[int]:
        """The entries every layer holds: one value (all layers share ``length``)."""
        return {self.length}

    @property
    def layers(self) -> list[LayerView]:
        n = self.length
        return [LayerView(k[..., :n, :], v[..., :n, :]) for k, v in zip(self.keys, self.values)]

    def nbytes(self) -> int:
        """Bytes held (the whole capacity: what the document really costs)."""
        return 2 * self.keys.numel() * self.keys.element_size()

    def empty_like(self) -> "KVBuffers":
        layers, _, kv_heads, _, head_dim = self.keys.shape
        return type(self)(layers, kv_heads, head_dim, self.keys.dtype, self.keys.device,
                          self.length)

    def reserve(self, extra: int) -> None:
        """Room for ``extra`` entries after ``length`` (doubling, so rarely)."""
        need = self.length + extra
        if need <= self.capacity:
            return
        cap = _rounded(max(need, 2 * self.capacity))
        for name in ("keys", "values"):
            old = getattr(self, name)
            new = old.new_zeros(*old.shape[:3], cap, old.shape[4])
            new[..., :self.length, :] = old[..., :self.length, :]
            setattr(self, name, new)

    def truncate(self, n: int) -> None:
        self.length = min(self.length, max(0, n))

    def gather(self, index: torch.Tensor, holes: torch.Tensor, start: int = 0) -> None:
        """The cache becomes the old entries at ``index`` [m], zeros at ``holes``.
        The first ``start`` stay in place (``index[:start]`` is ``0 .. start - 1``)."""
        self.reserve(max(0, len(index) - self.length))
        for t in (self.keys, self.values):                    # [L, 1, kv, cap, d]
            t[..., start:len(index), :] = t.index_select(3, index[start:])
            t.index_fill_(3, holes, 0)
        self.length = len(index)

    def rotate(self, start: int, end: int, delta: int, rotate: Rotate) -> None:
        """Keys at ``start:end`` re-rotated by ``delta`` positions, in place."""
        keys = self.keys[..., start:end, :]
        keys.copy_(rotate(keys, delta))

    def fill_holes(self, holes: torch.Tensor, n: int) -> None:
        """Entries appended after the first ``n`` move into ``holes`` [m]; ``n`` are kept."""
        m = self.length - n
        for t in (self.keys, self.values):
            t.index_copy_(3, holes, t[..., n:n + m, :].clone())
        self.length = n

    def keep(self, start: int, offsets: torch.Tensor) -> None:
        """Of the entries from ``start`` on, keep those at ``offsets`` [m] (increasing)."""
        end = start + len(offsets)
        for t in (self.keys, self.values):
            t[..., start:end, :] = t.index_select(3, offsets + start)
        self.length = end

    def select(self, entries: torch.Tensor) -> "KVBuffers":
        """A new store holding the entries at ``entries`` [m], in order."""
        out = self.empty_like()
        out.reserve(len(entries))
        out.keys[..., :len(entries), :] = self.keys.index_select(3, entries)
        out.values[..., :len(entries), :] = self.values.index_select(3, entries)
        out.length = len(entries)
        return out

    def append_from(self, other: "KVBuffers", start: int, end: int, delta: int,
                    rotate: Rotate | None) -> None:
        """Append ``other``'s entries ``start:end``, keys rotated by ``delta`` if ``rotate``."""
        m = end - start
        self.reserve(m)
        keys = other.keys[..., start:end, :]
        a, b = self.length, self.length + m
        self.keys[..., a:b, :] = keys if rotate is None or delta == 0 else rotate(keys, delta)
        self.values[..., a:b, :] = other.values[..., start:end, :]
        self.length = b


def _rounded(n: int) -> int:
    return max(CAPACITY_STEP, -(-n // CAPACITY_STEP) * CAPACITY_STEP)
