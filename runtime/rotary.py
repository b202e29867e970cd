"""The model's rotary embedding: its type, those whose keys cannot be re-rotated, its table."""
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
    """cos, sin [1, n, d] -> [1, 1, n, d], sin's first half negated (``rotate_half`` in one op)."""
    half = sin.shape[-1] // 2
    return cos.unsqueeze(1), torch.cat((-sin[..., :half], sin[..., half:]), -1).unsqueeze(1)


def static_rope(config) -> bool:
    """Whether a position's cos and sin never change, so that a table of positions holds them."""
    return rope_type(config) not in UNSUPPORTED_ROPE


class RopeTable:
    """The model's cos and sin' (``signed_rope``) for positions 0 .. P - 1, computed once."""

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
