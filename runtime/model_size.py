"""A model's size as its checkpoint stores it, from the safetensors headers (no tensor read), so
no layout in memory (packed, tied, dequantized) changes the count. Under SMALL_MODEL_PARAMS a
forward is bound by per-op overhead, not by weight products."""
from __future__ import annotations

import json
import math
import struct
from dataclasses import dataclass
from pathlib import Path

from inkling.runtime.errors import ModelError
from inkling.runtime.model_files import weights_refusal

SMALL_MODEL_PARAMS = 100_000_000
# model.weights: auto holds a model of SMALL_MODEL_PARAMS or more as int8 panels where the
# native forward runs it (runtime/int8_panels.py, docs/decisions/lean-weights.md)
WEIGHT_FORMATS = ("auto", "float", "int8")
NATIVE_AUTO_MAX_PARAMS = 600_000_000   # auto's native forward: docs/decisions/forward-choice.md
SCALE_SUFFIX = ".scale"          # an int8 folder's per-channel scales: not parameters
HEADER_MAX = 100 << 20           # a larger header is not a safetensors file
DTYPE_NAMES = {"F64": "float64", "F32": "float32", "F16": "float16", "BF16": "bfloat16",
               "I8": "int8", "U8": "uint8", "I16": "int16", "I32": "int32", "I64": "int64",
               "BOOL": "bool", "F8_E4M3": "float8_e4m3fn", "F8_E5M2": "float8_e5m2"}


@dataclass(frozen=True)
class Checkpoint:
    """What a folder's safetensors files hold: each stored tensor counted once."""
    params: int      # elements of the stored weights (an int8 folder's scales left out)
    bytes: int       # bytes of every stored tensor's data
    format: str      # int8 for an int8 folder, else the dtype holding most parameters


def read_header(file: Path) -> dict[str, dict]:
    """name -> {"dtype", "shape", "data_offsets"} of a safetensors file; ModelError unreadable."""
    try:
        with file.open("rb") as f:
            (size,) = struct.unpack("<Q", f.read(8))
            if size > HEADER_MAX:
                raise ValueError(f"a header of {size} bytes")
            header = json.loads(f.read(size))
    except (OSError, ValueError, struct.error) as exc:
        raise ModelError(weights_refusal(file, exc)) from None
    header.pop("__metadata__", None)
    return header


def checkpoint_of(path: Path, int8: bool = False) -> Checkpoint:
    """The checkpoint of folder ``path``; ``int8``: an int8 folder (its NAME.scale not counted)."""
    params, nbytes, by_dtype = 0, 0, {}
    for file in sorted(Path(path).glob("*.safetensors")):
        for name, info in read_header(file).items():
            start, end = info["data_offsets"]
            nbytes += end - start
            if int8 and name.endswith(SCALE_SUFFIX):
                continue
            n = math.prod(info["shape"])
            params += n
            by_dtype[info["dtype"]] = by_dtype.get(info["dtype"], 0) + n
    if int8:
        return Checkpoint(params, nbytes, "int8")
    top = max(by_dtype, key=by_dtype.get, default="?")
    return Checkpoint(params, nbytes, DTYPE_NAMES.get(top, top.lower()))

