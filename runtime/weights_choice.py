"""Which way a model's weights are held (``model.weights``): int8 panels only
(``int8_panels.py``) or float, decided on the model's structure before any weight is read
(docs/decisions/lean-weights.md)."""
from __future__ import annotations

import torch

from inkling.runtime import compact_llama, native_llama
from inkling.runtime.errors import ModelError
from inkling.runtime.model_size import SMALL_MODEL_PARAMS


def refusal(model: torch.nn.Module, device: torch.device, dtype: torch.dtype, forward: str
            ) -> str | None:
    """Why the meta ``model`` cannot be held as int8 panels on ``device`` computing in
    ``dtype`` for ``forward``."""
    if device.type != "cpu":
        return f"int8 panels are the native forward's, a CPU forward (the model is on {device})"
    if dtype != torch.float32:
        return f"the native layers compute in float32, not {str(dtype).removeprefix('torch.')}"
    if forward not in ("auto", "native"):
        return f"model.forward {forward} runs float weights"
    why = compact_llama.refusal(model) or native_llama.structure_refusal(model)
    if why is not None:
        return f"no native forward: {why}"
    try:
        native_llama.load_extension(wait=True)
    except native_llama.NativeUnavailable as exc:
        return str(exc)
    return None


def wanted(weights: str, model: torch.nn.Module, device: torch.device, dtype: torch.dtype,
           forward: str, params: int, culprit: str) -> bool:
    """Whether ``model`` (on the meta device) is read as int8 panels under model.weights
    ``weights``: int8 asked for (ModelError naming ``culprit`` where it cannot be), or auto
    on a model of SMALL_MODEL_PARAMS or more that the native forward runs."""
    if weights == "float" or (weights == "auto" and params < SMALL_MODEL_PARAMS):
        return False
    why = refusal(model, device, dtype, forward)
    if why is not None and weights == "int8":
        raise ModelError(f"{culprit}: model.weights int8 cannot run here: {why}")
    return why is None
