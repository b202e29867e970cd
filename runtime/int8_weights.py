"""int8 weights with a float32 scale per output channel, in a model folder's safetensors.
``NAME`` [out, in] is ``NAME.int8`` times ``NAME.scale`` [out] by rows, kept in
``model.inkling_int8`` for the native panels (docs/decisions/int8-panels.md)."""
from __future__ import annotations

import json
from pathlib import Path

import torch
from safetensors.torch import load_file

from inkling.runtime.errors import ModelError

MARKER = "int8"
INT8_SUFFIX, SCALE_SUFFIX = ".int8", ".scale"


def quantize_rows(w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """w [out, in] -> (int8 [out, in], scale [out]): each row over its largest magnitude / 127."""
    w = w.float()
    scale = (w.abs().amax(dim=1) / 127.0).clamp_min(1e-12)           # [out]
    q = torch.round(w / scale[:, None]).clamp_(-127, 127).to(torch.int8)
    return q, scale


def dequantize(q: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """int8 [out, in], scale [out] -> float32 [out, in]."""
    return q.float() * scale[:, None]


def is_int8_folder(path: Path) -> bool:
    meta = Path(path) / "inkling.json"
    return meta.is_file() and json.loads(meta.read_text()).get("weights") == MARKER


def read_tensors(path: Path) -> dict[str, torch.Tensor]:
    """Every tensor of the folder's safetensors files."""
    tensors: dict[str, torch.Tensor] = {}
    for f in sorted(Path(path).glob("*.safetensors")):
        tensors.update(load_file(str(f)))
    return tensors


def split_int8(tensors: dict[str, torch.Tensor]
               ) -> tuple[dict[str, torch.Tensor], dict[str, tuple[torch.Tensor, torch.Tensor]]]:
    """(float state dict with the int8 weights dequantized, NAME -> (int8, scale))."""
    state, int8 = {}, {}
    for key, t in tensors.items():
        if key.endswith(INT8_SUFFIX):
            name = key.removesuffix(INT8_SUFFIX)
            scale = tensors.get(name + SCALE_SUFFIX)
            if scale is None or t.dtype != torch.int8 or scale.shape != t.shape[:1]:
                raise ModelError(f"{key}: an int8 weight needs {name}{SCALE_SUFFIX} of "
                                 f"[{t.shape[0]}] float32 beside it")
            int8[name] = (t, scale.float())
            state[name] = dequantize(t, scale.float())
        elif not key.endswith(SCALE_SUFFIX):
            state[key] = t
    return state, int8


def take_int8(int8: dict[str, tuple[torch.Tensor, torch.Tensor]]):
    """The reader's ``take`` for an int8 folder: NAME.int8 and NAME.scale read as NAME's float
    weight, the pair kept in ``int8``; a scale is read with its weight."""
    from inkling.runtime.checkpoint_reader import read_tensor  # lazy: int8_convert skips it

    def take(tensors: dict, key: str) -> tuple[str, torch.Tensor] | None:
        if key.endswith(SCALE_SUFFIX):
            return None
        if not key.endswith(INT8_SUFFIX):
            return key, read_tensor(tensors, key)
        name, q, scale = read_pair(tensors, key)
        int8[name] = (q, scale)
        return name, dequantize(q, scale)
    return take


def read_pair(tensors: dict, key: str) -> tuple[str, torch.Tensor, torch.Tensor]:
    """(NAME, its int8 [out, in], its float32 scale [out]) of an int8 folder's ``NAME.int8``
    and the ``NAME.scale`` beside it; ModelError where the pair is not that."""
    from inkling.runtime.checkpoint_reader import read_tensor  # lazy: int8_convert skips it
    name = key.removesuffix(INT8_SUFFIX)
    q = read_tensor(tensors, key)
    scale = read_tensor(tensors, name + SCALE_SUFFIX) if name + SCALE_SUFFIX in tensors \
        else None
    if scale is None or q.dtype != torch.int8 or q.dim() != 2 or scale.shape != q.shape[:1]:
        raise ModelError(f"{key}: an int8 weight needs {name}{SCALE_SUFFIX} of "
                         f"[{q.shape[0]}] float32 beside it")
    return name, q, scale.float()


def load_int8_model(path: Path, dtype: torch.dtype, cls=None):
    """An int8 folder's model read lean as ``cls`` (the reader's table; None: transformers'
    auto class): dequantized weights in ``dtype``, the int8 pairs in ``inkling_int8``."""
    from inkling.runtime.checkpoint_reader import read_lean  # lazy: int8_convert skips it
    if cls is None:
        from transformers import AutoConfig, MODEL_FOR_CAUSAL_LM_MAPPING  # lazy: other families
        config = AutoConfig.from_pretrained(path, local_files_only=True)
        cls = MODEL_FOR_CAUSAL_LM_MAPPING[type(config)]
    int8: dict[str, tuple[torch.Tensor, torch.Tensor]] = {}
    model = read_lean(path, cls, dtype, take_int8(int8))
    model.inkling_int8 = int8
    return model
