"""What a model folder's files must be before torch sees them: config.json an object whose
sizes are positive numbers, each safetensors file whole. Each bad file is one ModelError
naming it, so that no library's traceback stands for a broken download."""
from __future__ import annotations

import json
from pathlib import Path

from safetensors import SafetensorError, safe_open

from inkling.runtime.errors import ModelError

# the config's sizes the loader, transformers' classes and the runtime read
POSITIVE_INTS = ("hidden_size", "num_hidden_layers", "num_attention_heads",
                 "num_key_value_heads", "intermediate_size", "vocab_size",
                 "max_position_embeddings", "head_dim")
POSITIVE_NUMBERS = ("rope_theta", "rms_norm_eps")
# safetensors' words for a file shorter than its header says
TRUNCATED = ("incomplete metadata", "invalid header length", "not fully covered")


def read_config(path: Path) -> dict:
    """The folder's config.json, an object whose sizes are positive; ModelError naming it."""
    cfg_path = path / "config.json"
    if not cfg_path.is_file():
        raise ModelError(f"model path {path} has no config.json (is it a Hugging Face model folder?)")
    try:
        cfg = json.loads(cfg_path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ModelError(f"model config {cfg_path} cannot be read: {exc}") from None
    if not isinstance(cfg, dict):
        raise ModelError(f"model config {cfg_path} must be a JSON object, "
                         f"not a {type(cfg).__name__}")
    for key in POSITIVE_INTS + POSITIVE_NUMBERS:
        if cfg.get(key) is not None and not _positive(cfg[key], key in POSITIVE_INTS):
            kind = "a positive integer" if key in POSITIVE_INTS else "a positive number"
            raise ModelError(f"model config {cfg_path}: {key} must be {kind}, "
                             f"not {cfg[key]!r}")
    return cfg


def _positive(value, integer: bool) -> bool:
    if isinstance(value, bool) or not isinstance(value, int if integer else (int, float)):
        return False
    return value > 0


def check_weights(file: Path) -> None:
    """A ModelError naming ``file`` unless safetensors reads its header and it covers its data."""
    try:
        with safe_open(str(file), framework="np"):
            pass
    except (SafetensorError, OSError) as exc:
        raise ModelError(weights_refusal(file, exc)) from None


def weights_refusal(file: Path, exc: Exception) -> str:
    """The one line for safetensors file ``file`` that ``exc`` says cannot be read."""
    reason = str(exc).splitlines()[0].removeprefix("Error while deserializing header: ")
    hint = " (truncated?)" if any(word in reason for word in TRUNCATED) else ""
    return f"model file {file} cannot be read: {reason}{hint}"
