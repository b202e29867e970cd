"""The forwards a model can run by, by name, and the interface each one is behind
(torch-free: the options tree and the command line name them without importing torch).
runtime/forward_choice.py decides once which one a cache runs."""
from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    import torch

FORWARDS = ("auto", "native", "compact", "captured", "reference")


@runtime_checkable
class Forward(Protocol):
    """One way to run the model over a key/value store of its own making: the compact,
    native and captured forwards (``compact_llama.py`` and its subclasses) and
    transformers' own (``reference_forward.py``). A cache holds one and never asks which."""

    name: str                                  # native | compact | captured | reference

    @property
    def device(self) -> "torch.device": ...

    def new_store(self):
        """An empty key/value store this forward writes (``kv_buffers.py``'s operations)."""

    def embed(self, ids: "torch.Tensor") -> "torch.Tensor":
        """ids [1, n] -> embeddings [1, n, hidden]."""

    def forward(self, kv, embeds: "torch.Tensor", positions: "torch.Tensor",
                mask: "torch.Tensor | None" = None, keep: int = 0) -> "torch.Tensor":
        """embeds [1, n, hidden] after ``kv``'s entries at ``positions`` [1, n] under
        ``mask`` (None: causal; else additive [1, 1, n, length + n]) -> logits
        [1, keep or n, vocab] (the model's dtype); the new entries appended to ``kv``."""

    def picks_threads(self, rows: int) -> bool:
        """Whether a forward of ``rows`` rows gives the same bits on any thread count (the
        runtime may then choose the count by measurement)."""
