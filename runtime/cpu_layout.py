"""Linear layers laid out for small-batch inference on a CPU.

``nn.Linear`` computes ``x @ W.T`` with ``W`` stored [out, in]. During decoding ``x``
has 1 to a few dozen rows, and the CPU BLAS then reads the weight in its transposed
order: on the 2-core machine inkling is developed on, a forward of the bundled model
takes about 20% longer than with the weight stored [in, out] and multiplied as
``x @ Wt`` (``benchmarks/cpu_layout.py`` measures it). This module swaps each linear
layer for :class:`InputMajorLinear`, which holds ``Wt`` contiguous; a tied output
layer shares its storage with the input embedding (which becomes a strided view of
it), so no weight is held twice. Only for inference, after ``model.eval()``.

Large layers (at least ``PACK_MIN_WEIGHTS`` weights: the bundled model's output layer,
every layer of a 1B model) go to :class:`PackedLinear` instead, whose weight oneDNN
has reordered into its blocked layout for a few rows: the bundled model's output layer
takes 0.17 ms for 1 row and 0.41 ms for 8 against 0.27 and 1.42 ms as ``x @ Wt``
(MKL's GEMM for a few rows is far slower per row than its GEMV for one), a large part
of what made verifying a draft tree or decoding k branches costly per row. Smaller layers stay
``x @ Wt``: oneDNN's fixed cost per call (about 20 us) outweighs its gain there. A tied
output layer is packed only while the copy costs at most ``TIED_PACK_MAX_BYTES`` (the
embedding keeps its own rows).
"""
from __future__ import annotations

import torch

PACK_MIN_WEIGHTS = 1 << 20
PACK_ROWS_HINT = 8                  # oneDNN tunes the packed layout for about this many rows
TIED_PACK_MAX_BYTES = 256 << 20


class InputMajorLinear(torch.nn.Module):
    """``y = x @ weight_t (+ bias)`` with ``weight_t`` [in, out] contiguous."""

    def __init__(self, weight_t: torch.Tensor, bias: torch.Tensor | None):
        super().__init__()
        self.in_features, self.out_features = weight_t.shape
        self.weight_t = torch.nn.Parameter(weight_t, requires_grad=False)
        self.bias = None if bias is None else torch.nn.Parameter(bias.detach(),
                                                                 requires_grad=False)

    @property
    def weight(self) -> torch.Tensor:
        """The usual [out, in] weight (a view), for code that reads ``.weight``."""
        return self.weight_t.t()

    def forward(self, x: torch.Tensor) -> torch.Tensor:            # [..., in] -> [..., out]
        y = x @ self.weight_t
        return y if self.bias is None else y + self.bias


class PackedLinear(torch.nn.Module):
    """``y = x @ weight.T (+ bias)`` with ``weight`` [out, in] held in oneDNN's packed
    layout (an opaque tensor, not a parameter: inference only)."""

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor | None):
        super().__init__()
        self.out_features, self.in_features = weight.shape
        self.packed = torch.ops.mkldnn._reorder_linear_weight(weight.detach().contiguous(),
                                                              PACK_ROWS_HINT)
        self.bias = None if bias is None else torch.nn.Parameter(bias.detach(),
                                                                 requires_grad=False)

    @property
    def weight(self) -> torch.Tensor:
        """The usual [out, in] weight, unpacked (a copy: slow, for inspection only)."""
        return self.packed.to_dense()

    def forward(self, x: torch.Tensor) -> torch.Tensor:            # [..., in] -> [..., out]
        return torch.ops.mkldnn._linear_pointwise(x.contiguous(), self.packed, self.bias,
                                                  "none", [None], "")

    @staticmethod
    def suits(weight: torch.Tensor, tied: bool) -> bool:
        """Large enough to gain, a float32 CPU weight, and a tied copy not too large."""
        return (weight.numel() >= PACK_MIN_WEIGHTS and weight.dtype == torch.float32
                and weight.device.type == "cpu" and torch.backends.mkldnn.is_available()
                and (not tied or weight.numel() * 4 <= TIED_PACK_MAX_BYTES))


def lay_out_for_cpu(model: torch.nn.Module, pack: bool = True) -> int:
    """Replace the model's ``nn.Linear`` layers by :class:`PackedLinear` (large ones,
    where ``pack``) or :class:`InputMajorLinear` in place; returns how many were replaced.
    A tied output layer that is not packed keeps sharing its weight with the input
    embedding. ``pack`` False: every layer [in, out], as the native layers read them
    (model.forward native on a model whose layers would be packed)."""
    emb = model.get_input_embeddings() if hasattr(model, "get_input_embeddings") else None
    tied = None
    if isinstance(emb, torch.nn.Embedding):
        tied = emb.weight.data_ptr()
    swapped = 0
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if type(child) is not torch.nn.Linear:
                continue
            is_tied = tied is not None and child.weight.data_ptr() == tied
            if pack and PackedLinear.suits(child.weight, is_tied):
                setattr(parent, name, PackedLinear(child.weight, child.bias))
                swapped += 1
                continue
            weight_t = child.weight.detach().t().contiguous()            # [in, out]
            if is_tied:
                # the embedding reads rows of [vocab, hidden]: a view of the same storage
                emb.weight = torch.nn.Parameter(weight_t.t(), requires_grad=False)
            setattr(parent, name, InputMajorLinear(weight_t, child.bias))
            swapped += 1
    return swapped
