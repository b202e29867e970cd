"""`inkling train --ship DIR`: the best export of a training folder becomes the bundled model.

``DIR`` is a run folder (its ``best/`` is taken) or an export. The weights must fit the size
limits and the tokenizer be the bundled one; the card is rewritten, and the now stale model
datastore must be made again."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from inkling.models import BUNDLED_MODEL_DIR
from inkling.training.model_card import write_model_card

MAX_FILE_MB, MAX_TOTAL_MB = 15.0, 25.0
SHIPPED = ("config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json",
           "inkling.json", "train_summary.json", "training_log.tsv", "loss_curve.png",
           "model.safetensors.index.json")


def export_dir(src: Path) -> Path:
    if (src / "best" / "config.json").is_file():
        return src / "best"
    if (src / "config.json").is_file():
        return src
    raise FileNotFoundError(f"--ship {src}: neither {src}/best/ nor {src} holds an export "
                            "(config.json); no evaluation has improved yet?")


def check_export(src: Path, dest: Path = BUNDLED_MODEL_DIR) -> list[Path]:
    shards = sorted(src.glob("*.safetensors"))
    if not shards:
        raise FileNotFoundError(f"{src}: no safetensors")
    sizes = [p.stat().st_size / 1e6 for p in shards]
    if max(sizes) > MAX_FILE_MB or sum(sizes) > MAX_TOTAL_MB:
        raise ValueError(f"{src}: weights over the limits ({max(sizes):.1f} MB largest file, "
                         f"{sum(sizes):.1f} MB in all; at most {MAX_FILE_MB} and {MAX_TOTAL_MB})")
    if (dest / "tokenizer.json").is_file() and \
            (dest / "tokenizer.json").read_text() != (src / "tokenizer.json").read_text():
        raise ValueError(f"{src}: its tokenizer differs from {dest}'s; shipping it would change "
                         "the runtime's vocabulary")
    return shards


def ship(src_arg: str, dest: Path = BUNDLED_MODEL_DIR) -> dict:
    src = export_dir(Path(src_arg))
    shards = check_export(src, dest)
    for old in dest.glob("*.safetensors"):
        old.unlink()
    (dest / "model.safetensors.index.json").unlink(missing_ok=True)
    for p in shards:
        shutil.copy2(p, dest / p.name)
    for name in SHIPPED:
        if (src / name).is_file():
            shutil.copy2(src / name, dest / name)
    summary = json.loads((dest / "train_summary.json").read_text())
    write_model_card(dest, evals=None, command="")
    val, pkg = summary.get("validation_loss"), summary.get("validation_loss_package")
    losses = "" if val is None else f" (validation loss {val:.4f} held-out stdlib" + (
        f", {pkg:.4f} held-out package)" if pkg is not None else ")")
    print(f"shipped {src} -> {dest}{losses}.\n"
          "Next: measure next-line exact match and write it into the card, then make the model "
          "datastore again (the shipped one is now stale):\n"
          "  inkling evaluate --write-card\n"
          "  inkling datastore model --from corpus --items 32768 --seed 0")
    return summary
