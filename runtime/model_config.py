"""A model's config as transformers resolves it (its family's defaults, rope parameters, layer
types), kept in the user's cache so that a later start of the same config reads plain JSON
instead of importing transformers (over a second of every start with inkling's own modules,
docs/decisions/llama-modules.md). A record written by another transformers version, or for
other fields, reads as a miss."""
from __future__ import annotations

import importlib.metadata
from pathlib import Path
from types import SimpleNamespace

from inkling.runtime.user_cache import cache_folder, digest, read_record, write_record


class HeldConfig(SimpleNamespace):
    """A resolved config's fields as attributes, read as transformers' config reads them."""

    def to_dict(self) -> dict:
        return dict(vars(self))


def resolved(family, fields: dict, where: str) -> HeldConfig:
    """``fields`` (a config.json's, or a GGUF file's mapped ones) resolved by ``family``'s
    transformers config class, from the cache where ``where`` (the model's path) was resolved
    before with the same fields."""
    key = {"family": family.config_name, "fields": digest(fields),
           "transformers": importlib.metadata.version("transformers")}
    record = record_file(where)
    body = read_record(record, key)
    if body is None:
        body = family.config_class(**fields).to_dict()
        write_record(record, key, body)
    return HeldConfig(**body)


def record_file(where: Path) -> Path:
    """Where the resolved config of the model at ``where`` (a folder or a GGUF file) is kept."""
    return cache_folder("configs") / f"{digest(str(Path(where).resolve()))}.json"


def transformers_config(config):
    """``config`` as its family's transformers config (what transformers' own code takes);
    a transformers config as it is."""
    if not isinstance(config, HeldConfig):
        return config
    from transformers import CONFIG_MAPPING       # lazy: only transformers' own code needs it
    held = config.to_dict()
    built = CONFIG_MAPPING[held["model_type"]].from_dict(
        {k: v for k, v in held.items() if not k.startswith("_")})
    built._name_or_path, built.dtype = held.get("_name_or_path", ""), held.get("dtype")
    return built
