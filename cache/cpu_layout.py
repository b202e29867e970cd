"""Linear layers laid out for small-batch inference on a CPU.

``nn.Linear`` computes ``x @ W.T`` with ``W`` stored [out, in]. During decoding ``x``
has 1 to a few dozen rows, and the CPU BLAS then reads the weight in its transposed
order: on the 2-core machine inkling is developed on, a forward of the bundled model
takes about 20% longer than with the weight stored [in, out] and multiplied as
``x @ Wt`` (``benchmarks/cpu_layout.py`` measures it). This module swaps each linear
layer for :class:`InputMajorLinear`, which holds ``Wt`` contiguous; a tied output
layer shares its storage with the input embedding (which becomes a strided view of
it), so no weight is held twice. Only for inference, after ``model.eval()``.
"""
from __future__ import annotations

import torch


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


def lay_out_for_cpu(model: torch.nn.Module) -> int:
    """Replace the model's ``nn.Linear`` layers by :class:`InputMajorLinear` in place;
    returns how many were replaced. A tied output layer keeps sharing its weight with
    the input embedding."""
    emb = model.get_input_embeddings() if hasattr(model, "get_input_embeddings") else None
    tied = None
    if isinstance(emb, torch.nn.Embedding):
        tied = emb.weight.data_ptr()
    swapped = 0
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if type(child) is not torch.nn.Linear:
                continue
            weight_t = child.weight.detach().t().contiguous()            # [in, out]
            if tied is not None and child.weight.data_ptr() == tied:
                # the embedding reads rows of [vocab, hidden]: a view of the same storage
                emb.weight = torch.nn.Parameter(weight_t.t(), requires_grad=False)
            setattr(parent, name, InputMajorLinear(weight_t, child.bias))
            swapped += 1
    return swapped
