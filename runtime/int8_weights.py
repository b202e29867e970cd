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


def load_int8_model(path: Path, dtype: torch.dtype):
    """An int8 folder's model: dequantized weights in ``dtype``, the int8 in ``inkling_int8``."""
    from transformers import AutoConfig, AutoModelForCausalLM  # lazy: int8_convert skips it
    config = AutoConfig.from_pretrained(path, local_files_only=True)
    config._attn_implementation = "sdpa"
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)  # no float16 rounding
    state, int8 = split_int8(read_tensors(path))
    missing, unexpected = model.load_state_dict(state, strict=False)
    tied = {"lm_head.weight"} if getattr(config, "tie_word_embeddings", False) else set()
    if set(missing) - tied or unexpected:
        raise ModelError(f"model {path}: int8 weights do not match its config (missing "
                         f"{sorted(set(missing) - tied)[:3]}, unexpected {unexpected[:3]})")
    model.tie_weights()
    model.to(dtype)
    model.inkling_int8 = int8
    return model
