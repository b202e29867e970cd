"""A run's ``checkpoint.pt``, written atomically and read with ``torch.load(weights_only=True)``,
so that loading one runs no code: it holds tensors and plain values only (the RNG states
included). A file that holds anything else is refused in one line naming it."""
from __future__ import annotations

import os
import pickle
import random
import zipfile
from pathlib import Path

import numpy as np
import torch

CHECKPOINT = "checkpoint.pt"
# what Run.checkpoint writes, each read by a resume or --init-from
KEYS = ("options", "config", "tokenizer", "model", "optimizer", "schedule", "state", "rng",
        "prior")
# numpy's array rebuilders, plain data: numpy's generator state as checkpoints also keep it
NUMPY_ARRAYS = [np._core.multiarray._reconstruct, np.ndarray, np.dtype,
                type(np.dtype(np.uint32))]


def rng_state() -> dict:
    """torch's, numpy's and Python's generator states as tensors and plain values."""
    name, keys, pos, has_gauss, gauss = np.random.get_state()
    return {"torch": torch.get_rng_state(),
            "numpy": {"name": name, "keys": torch.from_numpy(keys.astype(np.int64)),
                      "pos": int(pos), "has_gauss": int(has_gauss), "gauss": float(gauss)},
            "python": random.getstate()}


def set_rng_state(state: dict) -> None:
    """Put back the generator states :func:`rng_state` gave."""
    torch.set_rng_state(state["torch"])
    n = state["numpy"]
    np.random.set_state(n if isinstance(n, tuple) else (
        n["name"], n["keys"].numpy().astype(np.uint32), n["pos"], n["has_gauss"], n["gauss"]))
    version, internal, gauss = state["python"]
    random.setstate((version, tuple(internal), gauss))


def save_checkpoint(obj: dict, path: Path) -> None:
    """Write ``obj`` to ``path`` whole or not at all: a temporary file, synced, then renamed."""
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("wb") as f:
        torch.save(obj, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def load_checkpoint(path: Path) -> dict:
    """The checkpoint at ``path`` on the CPU; a ValueError naming it when it cannot be read,
    holds what only a full unpickler rebuilds (which could run code) or lacks a part."""
    if not zipfile.is_zipfile(path):
        raise ValueError(f"{path} cannot be read: it is not the zip archive torch.save writes "
                         "(truncated, or another format?)")
    try:
        with torch.serialization.safe_globals(NUMPY_ARRAYS):
            found = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as exc:
        raise ValueError(f"{path} is refused: it holds objects beyond tensors and plain "
                         f"values ({_culprit(exc)}), and loading them could run code") from None
    except (OSError, RuntimeError, EOFError) as exc:
        raise ValueError(f"{path} cannot be read: {str(exc).splitlines()[0]}") from None
    missing = [key for key in KEYS if key not in found] if isinstance(found, dict) else KEYS
    if missing:
        raise ValueError(f"{path} is not a checkpoint of inkling train: it lacks "
                         f"{', '.join(missing)}")
    return found


def _culprit(exc: Exception) -> str:
    """The sentence of torch's refusal that names what it would not rebuild."""
    named = [line.strip() for line in str(exc).splitlines()
             if "GLOBAL" in line or line.startswith("Unsupported")]
    found = named[0].removeprefix("WeightsUnpickler error: ") if named else "a pickled object"
    return found.split(". ")[0].rstrip(".")
