"""Linear layers laid out for small-batch inference on a CPU (after ``model.eval()``).
Weights held [in, out] for ``x @ Wt``, large ones packed: docs/decisions/int8-panels.md."""
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
    """``y = x @ weight.T (+ bias)``, ``weight`` in oneDNN's packed layout (inference only)."""

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
    """Swap ``nn.Linear`` layers in place (large ones packed where ``pack``); returns how many."""
    emb = model.get_input_embeddings() if hasattr(model, "get_input_embeddings") else None
    tied = None
    if isinstance(emb, torch.nn.Embedding):
        tied = emb.weight.data_ptr()
    # by name, so that each replaced layer's weight is freed as it goes (peak memory at load)
    found = [(path, name) for path, parent in model.named_modules()
             for name, child in parent.named_children() if type(child) is torch.nn.Linear]
    for path, name in found:
        parent = model.get_submodule(path)
        child = getattr(parent, name)
        is_tied = tied is not None and child.weight.data_ptr() == tied
        if pack and PackedLinear.suits(child.weight, is_tied):
            setattr(parent, name, PackedLinear(child.weight, child.bias))
            continue
        weight_t = child.weight.detach().t().contiguous()                # [in, out]
        if is_tied:                                                       # a view: [vocab, hidden]
            emb.weight = torch.nn.Parameter(weight_t.t(), requires_grad=False)
        setattr(parent, name, InputMajorLinear(weight_t, child.bias))
        del child
    return len(found)
