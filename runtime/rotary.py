"""What the model's rotary embedding is: its scaling type, the types whose keys cannot be
re-rotated when their tokens move (the cache recomputes those instead), and the table of
its cos and sin the forwards look positions up in."""
from __future__ import annotations

import torch

from inkling.runtime.errors import ModelError

UNSUPPORTED_ROPE = {
    "dynamic": "dynamic-NTK scaling changes the frequencies with the sequence length",
    "longrope": "longrope uses different frequencies for short and long sequences",
}


class UnsupportedRope(ModelError):
    """The model's rotary scaling makes re-rotation wrong; the cache recomputes instead."""


def rope_type(config) -> str:
    params = getattr(config, "rope_parameters", None) or getattr(config, "rope_scaling", None) or {}
    return params.get("rope_type") or params.get("type") or "default"


def signed_rope(cos: torch.Tensor, sin: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """cos, sin [1, n, d] -> [1, 1, n, d] each, sin with its first half negated:
    ``x * cos + x.roll(d / 2) * sin'`` is ``x * cos + rotate_half(x) * sin`` to the bit
    ((-a) * b == a * (-b)), in one op instead of four."""
    half = sin.shape[-1] // 2
    return cos.unsqueeze(1), torch.cat((-sin[..., :half], sin[..., half:]), -1).unsqueeze(1)


def static_rope(config) -> bool:
    """Whether a position's rotary cos and sin never change (every type but those whose
    frequencies move with the sequence's length): a table of positions holds them."""
    return rope_type(config) not in UNSUPPORTED_ROPE


class RopeTable:
    """The model's rotary cos and sin' (sin with its first half negated: ``x * cos +
    x.roll(d / 2) * sin'`` is transformers' ``x * cos + rotate_half(x) * sin`` to the bit)
    for positions 0 .. P - 1, computed once by the model's own rotary module and looked up
    per forward: a lookup takes about 3 us where the module's forward takes about 20 (a
    one-row step of the bundled model is about 300). Row for row what the module computes
    (a frequency times a position is one product, whatever the batch), for static rotary
    types only (``static_rope``). A position past the table grows it to twice the need."""

    def __init__(self, rotary: torch.nn.Module, dtype: torch.dtype, capacity: int = 4096):
        self.rotary, self.dtype = rotary, dtype
        self.cos: torch.Tensor | None = None                            # [P, d]
        self.sin: torch.Tensor | None = None                            # [P, d], sin'
        self.capacity = capacity

    def ensure(self, capacity: int, device: torch.device) -> None:
        """Tables that cover positions below ``capacity``, on ``device``."""
        if self.cos is not None and self.cos.shape[0] >= capacity and self.cos.device == device:
            return
        size = max(capacity, self.capacity)
        where = torch.arange(size, device=device)[None]                  # [1, P]
        probe = torch.zeros(1, dtype=self.dtype, device=device)
        cos, sin = signed_rope(*self.rotary(probe, position_ids=where))  # [1, 1, P, d] each
        self.cos, self.sin = cos[0, 0].contiguous(), sin[0, 0].contiguous()
        self.capacity = size

    def rows(self, positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """positions [n] -> cos, sin' [n, d] each (new tensors, on positions' device)."""
        if positions.device.type != "cpu":          # an index past a GPU table is no error
            self.ensure(int(positions.max()) + 1, positions.device)    # to catch: a sync
        elif self.cos is None:
            self.ensure(self.capacity, positions.device)
        try:
            return self.cos[positions], self.sin[positions]
        except IndexError:                                              # past the table
            self.ensure(2 * (int(positions.max()) + 1), positions.device)
            return self.cos[positions], self.sin[positions]
