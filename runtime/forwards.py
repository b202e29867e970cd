"""The forwards a model can run by, and their interface (torch-free, for options to name)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    import torch

FORWARDS = ("auto", "native", "compact", "captured", "reference")


@runtime_checkable
class Forward(Protocol):
    """One way to run the model over a key/value store of its own; a cache never asks which."""

    name: str                                  # native | compact | captured | reference

    @property
    def device(self) -> "torch.device": ...

    def new_store(self):
        """An empty key/value store this forward writes (``kv_buffers.py``'s operations)."""

    def embed(self, ids: "torch.Tensor") -> "torch.Tensor":
        """ids [1, n] -> embeddings [1, n, hidden]."""

    def forward(self, kv, embeds: "torch.Tensor", positions: "torch.Tensor",
                mask: "torch.Tensor | None" = None, keep: int = 0) -> "torch.Tensor":
        """embeds [1, n, hidden] at ``positions`` [1, n] -> logits [1, keep or n, vocab].
        ``mask``: None (causal) or additive [1, 1, n, length + n]; ``kv`` gets the new entries."""

    def picks_threads(self, rows: int) -> bool:
        """Whether ``rows`` rows give the same bits on any thread count (then measured)."""
