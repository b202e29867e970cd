"""A model folder's weights as int8 with per-output-channel scales (``runtime/int8_weights.py``).

``python -m inkling.training.int8_convert SRC DEST`` writes every decoder projection and the
embeddings as int8 with a float32 scale per output channel (``--float16-embeddings`` keeps those
float16), the norms float16, and marks ``inkling.json``; int8 everywhere costs no measurable loss
(docs/decisions/int8-panels.md)."""
from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

import torch
from safetensors.torch import save_file

from inkling.runtime.int8_weights import (INT8_SUFFIX, MARKER, SCALE_SUFFIX, quantize_rows,
                                        read_tensors)

EMBEDDINGS = "model.embed_tokens.weight"
SHARD_BYTES = 12_000_000           # no file over 15 MB
# what belongs to the float weights (card, evaluation, datastore): rebuilt for these
NOT_COPIED = ("model.safetensors.index.json", "model_datastore.npz", "README.md",
              "evaluation.json")


def is_quantized(name: str, t: torch.Tensor, embeddings: bool) -> bool:
    if t.dim() != 2:
        return False
    return name.endswith("_proj.weight") or (embeddings and name in (EMBEDDINGS, "lm_head.weight"))


def quantized_tensors(src: Path, embeddings: bool) -> tuple[dict[str, torch.Tensor], list[str]]:
    """(the tensors to write, the names kept float16)."""
    out, kept = {}, []
    for name, t in read_tensors(src).items():
        if is_quantized(name, t, embeddings):
            q, scale = quantize_rows(t)
            out[name + INT8_SUFFIX], out[name + SCALE_SUFFIX] = q, scale
        else:
            out[name] = t.to(torch.float16).contiguous()
            if t.dim() == 2:
                kept.append(name)
    return out, kept


def write_shards(tensors: dict[str, torch.Tensor], dest: Path) -> list[str]:
    """Safetensors shards of at most SHARD_BYTES and their index; the shard names."""
    shards: list[dict[str, torch.Tensor]] = [{}]
    size = 0
    for name in sorted(tensors):
        b = tensors[name].numel() * tensors[name].element_size()
        if size + b > SHARD_BYTES and shards[-1]:
            shards.append({})
            size = 0
        shards[-1][name] = tensors[name]
        size += b
    names = [f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors" for i in range(len(shards))]
    for name, shard in zip(names, shards):
        save_file(shard, str(dest / name), metadata={"format": "pt"})
    total = sum(t.numel() * t.element_size() for t in tensors.values())
    index = {"metadata": {"total_size": total},
             "weight_map": {k: n for n, s in zip(names, shards) for k in s}}
    (dest / "model.safetensors.index.json").write_text(json.dumps(index, indent=2) + "\n")
    return names


def convert(src: Path, dest: Path, embeddings: bool = True) -> dict:
    """Write the int8 folder; returns what ``inkling.json`` says of it."""
    src, dest = Path(src), Path(dest)
    if dest.resolve() == src.resolve():
        raise ValueError(f"{dest}: the int8 folder must be another folder than {src}")
    dest.mkdir(parents=True, exist_ok=True)
    for old in list(dest.glob("*.safetensors")) + [dest / "model.safetensors.index.json"]:
        old.unlink(missing_ok=True)
    for f in src.iterdir():
        if f.is_file() and not f.name.endswith(".safetensors") and f.name not in NOT_COPIED:
            shutil.copy2(f, dest / f.name)
    tensors, kept = quantized_tensors(src, embeddings)
    write_shards(tensors, dest)
    meta_path = dest / "inkling.json"
    meta = json.loads(meta_path.read_text()) if meta_path.is_file() else {}
    meta.update({"weights": MARKER, "float16_kept": kept})
    meta_path.write_text(json.dumps(meta, indent=2) + "\n")
    return meta


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m inkling.training.int8_convert",
                                 description="Write a model folder's weights as int8.")
    ap.add_argument("src", help="a model folder (float safetensors)")
    ap.add_argument("dest", help="the int8 folder to write")
    ap.add_argument("--float16-embeddings", action="store_true",
                    help="keep the embeddings (and the tied output layer) float16")
    a = ap.parse_args(argv)
    meta = convert(Path(a.src), Path(a.dest), not a.float16_embeddings)
    size = sum(f.stat().st_size for f in Path(a.dest).glob("*.safetensors"))
    print(f"{a.dest}: {size / 1e6:.1f} MB of safetensors; float16 kept: "
          f"{', '.join(meta['float16_kept']) or 'none'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
