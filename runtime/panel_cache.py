"""A model's int8 panels kept on disk between starts, so that the next start reads them as
they are instead of quantizing every weight again (docs/decisions/lean-weights.md).

One safetensors file per model path under the user's cache (``weights/``), named by the
path and by the weights files' names, sizes and modification times with the panel layout:
a changed model or layout reads as a miss and the model's older file is replaced. A file
that cannot be read or written costs only time: it is logged, never an error."""
from __future__ import annotations

import logging
import os
from pathlib import Path

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import save_file

from inkling.runtime.int8_panels import SCALE_ROWS, TILE
from inkling.runtime.user_cache import cache_folder, digest, weights_fingerprint

log = logging.getLogger(__name__)

LAYOUT = 1        # the panels' layout and the quantizer: a change makes every file a miss


def cache_file(model_path: Path) -> Path:
    """Where the panels of the model at ``model_path`` (a folder or a GGUF file) are kept."""
    path = Path(model_path).resolve()
    key = {"layout": LAYOUT, "tile": TILE, "scale_rows": SCALE_ROWS,
           "files": weights_fingerprint(path)}
    return cache_folder("weights") / f"{digest(str(path))}-{digest(key)}.safetensors"


def read(file: Path) -> dict[str, torch.Tensor]:
    """The panels kept in ``file`` (name -> int8 panels); empty where there are none."""
    if not file.is_file():
        return {}
    try:
        with safe_open(str(file), framework="pt", backend="pread") as f:
            return {name: f.get_tensor(name) for name in f.keys()}
    except (SafetensorError, OSError) as exc:
        log.warning("panel cache %s unreadable (%s); quantizing again", file, exc)
        return {}


def write(file: Path, panels: dict[str, torch.Tensor]) -> None:
    """Keep ``panels`` in ``file`` (a temporary file, then a rename), dropping the same
    model's older files; a failure is logged, since the file only saves time."""
    tmp = file.with_name(f"{file.name}.{os.getpid()}.tmp")
    try:
        file.parent.mkdir(parents=True, exist_ok=True)
        save_file(panels, str(tmp))
        tmp.replace(file)
        for old in file.parent.glob(f"{file.name.split('-')[0]}-*.safetensors"):
            if old != file:
                old.unlink(missing_ok=True)
    except (OSError, SafetensorError) as exc:
        tmp.unlink(missing_ok=True)
        log.warning("panel cache %s not written (%s)", file, exc)
