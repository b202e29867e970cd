"""A run's ``checkpoint.pt``, written atomically and read with ``torch.load(weights_only=True)``,
so that loading one runs no code: it holds tensors and plain values only (the RNG states
included). A file that holds anything else is refused in one line naming it."""
from __future__ import annotations

import os
import pickle
import random
from pathlib import Path

import numpy as np
import torch

CHECKPOINT = "checkpoint.pt"


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
    np.random.set_state((n["name"], n["keys"].numpy().astype(np.uint32), n["pos"],
                         n["has_gauss"], n["gauss"]))
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
    """The checkpoint at ``path`` on the CPU; a ValueError naming it when it cannot be read or
    holds what only a full unpickler rebuilds (which could run code)."""
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as exc:
        raise ValueError(f"{path} is refused: it holds objects beyond tensors and plain "
                         f"values ({_culprit(exc)}), and loading them could run code") from None
    except (OSError, RuntimeError, EOFError) as exc:
        raise ValueError(f"{path} cannot be read: {str(exc).splitlines()[0]}") from None


def _culprit(exc: Exception) -> str:
    """The sentence of torch's refusal that names what it would not rebuild."""
    named = [line.strip() for line in str(exc).splitlines() if "GLOBAL" in line]
    found = named[0].removeprefix("WeightsUnpickler error: ") if named else "a pickled object"
    return found.split(". ")[0].rstrip(".")
