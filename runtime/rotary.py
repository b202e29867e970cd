"""What the model's rotary embedding is: its scaling type, and the types whose keys cannot be
re-rotated when their tokens move (the cache recomputes those instead)."""
from __future__ import annotations

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
