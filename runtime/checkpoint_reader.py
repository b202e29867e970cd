"""A model folder read lean: its family's class built on the meta device, then each stored
tensor read from the safetensors files and cast to the runtime's dtype as it is assigned, so
there is no random init and no whole second copy (docs/decisions/lean-reader.md)."""
from __future__ import annotations

import importlib
import json
from contextlib import ExitStack
from pathlib import Path
from typing import Callable

import torch
from safetensors import SafetensorError, safe_open

from inkling.runtime.errors import ModelError
from inkling.runtime.model_files import weights_refusal

# model_type -> (module, class): the families whose checkpoints name their modules' tensors
FAMILIES = {
    "llama": ("transformers.models.llama.modeling_llama", "LlamaForCausalLM"),
    "mistral": ("transformers.models.mistral.modeling_mistral", "MistralForCausalLM"),
    "qwen2": ("transformers.models.qwen2.modeling_qwen2", "Qwen2ForCausalLM"),
    "qwen3": ("transformers.models.qwen3.modeling_qwen3", "Qwen3ForCausalLM"),
    "starcoder2": ("transformers.models.starcoder2.modeling_starcoder2", "Starcoder2ForCausalLM"),
}

Tensors = dict[str, safe_open]          # a stored tensor's name -> its file's open handle
# (the folder's tensors, a stored name) -> (the model's name, its tensor), or None: not a weight
Take = Callable[[Tensors, str], "tuple[str, torch.Tensor] | None"]


def family_class(model_type: str) -> type | None:
    """The table's class for ``model_type`` (only its module imported), or None."""
    entry = FAMILIES.get(model_type)
    return None if entry is None else getattr(importlib.import_module(entry[0]), entry[1])


def weight_files(path: Path) -> list[Path]:
    """The folder's safetensors files: the index's shards where it has one, else every file."""
    index = path / "model.safetensors.index.json"
    if not index.is_file():
        return sorted(path.glob("*.safetensors"))
    try:
        shards = sorted(set(json.loads(index.read_text())["weight_map"].values()))
    except (OSError, ValueError, KeyError, AttributeError) as exc:
        raise ModelError(f"model {path}: {index.name} cannot be read ({exc})") from None
    for name in shards:
        if not (path / name).is_file():
            raise ModelError(f"model {path}: {index.name} names {name}, which is not there")
    return [path / name for name in shards]


def open_tensors(path: Path, files: ExitStack) -> Tensors:
    """Every stored tensor's name -> its file, each file opened once under ``files``."""
    tensors: Tensors = {}
    for file in weight_files(path):
        try:
            handle = files.enter_context(safe_open(str(file), framework="pt", backend="pread"))
        except (SafetensorError, OSError) as exc:
            raise ModelError(weights_refusal(file, exc)) from None
        for key in handle.keys():
            tensors[key] = handle
    return tensors


def read_tensor(tensors: Tensors, key: str) -> torch.Tensor:
    """The stored tensor ``key``; a file that cannot give it is a ModelError naming the file."""
    try:
        return tensors[key].get_tensor(key)
    except (SafetensorError, OSError) as exc:
        raise ModelError(f"weights file of {key} cannot be read ({str(exc).splitlines()[0]})") \
            from None


def stored_rows(tensors: Tensors, key: str
                ) -> tuple[Callable[[int, int], torch.Tensor], tuple[int, ...]]:
    """(first, end) -> rows of the stored tensor ``key`` read from its file, and its shape:
    a large weight read a slice at a time; ModelError as read_tensor."""
    try:
        stored = tensors[key].get_slice(key)
        shape = tuple(stored.get_shape())
    except (SafetensorError, OSError) as exc:
        raise ModelError(f"weights file of {key} cannot be read ({str(exc).splitlines()[0]})") \
            from None

    def rows(first: int, end: int) -> torch.Tensor:
        try:
            return stored[first:end]
        except (SafetensorError, OSError) as exc:
            raise ModelError(f"weights file of {key} cannot be read "
                             f"({str(exc).splitlines()[0]})") from None
    return rows, shape


def take_stored(tensors: Tensors, key: str) -> tuple[str, torch.Tensor]:
    """A float folder's tensor: stored under the model's own name."""
    return key, read_tensor(tensors, key)


def empty_model(cls: type, path: Path) -> torch.nn.Module:
    """``cls`` at the folder's config on the meta device: no memory, no init."""
    config = cls.config_class.from_pretrained(path, local_files_only=True)
    config._attn_implementation = "sdpa"
    with torch.device("meta"):
        return cls(config)


def assign(model: torch.nn.Module, name: str, tensor: torch.Tensor) -> None:
    """Put ``tensor`` in place of the model's parameter or buffer ``name``."""
    owner, _, attr = name.rpartition(".")
    module = model.get_submodule(owner)
    if attr in module._parameters:
        old = module._parameters[attr]
        module._parameters[attr] = torch.nn.Parameter(tensor, requires_grad=old.requires_grad)
    else:
        module._buffers[attr] = tensor


def as_runtime(tensor: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """A float tensor in ``dtype`` (other tensors as stored)."""
    return tensor.to(dtype) if tensor.is_floating_point() else tensor


def fill(model: torch.nn.Module, path: Path, dtype: torch.dtype, take: Take) -> None:
    """Assign every weight the model's state names from the folder, then tie the tied ones."""
    wanted = dict(model.state_dict(keep_vars=True))        # name -> meta tensor
    tied = dict(getattr(model, "all_tied_weights_keys", {}))   # target -> source
    seen: set[str] = set()
    with ExitStack() as files:
        tensors = open_tensors(path, files)
        for key in list(tensors):
            taken = take(tensors, key)
            if taken is None:
                continue
            name, tensor = taken
            if name in tied:
                continue                  # a tied copy of its source: the source is kept
            if name not in wanted:
                raise ModelError(f"model {path}: tensor {key} is not a weight of its "
                                 f"{type(model).__name__}")
            place(model, wanted[name], name, as_runtime(tensor, dtype),
                  f"model {path}: tensor {key}", "config")
            seen.add(name)
    complete(model, set(wanted) - seen - set(tied), f"model {path}", "its safetensors")


def place(model: torch.nn.Module, meta: torch.Tensor, name: str, tensor: torch.Tensor,
          culprit: str, source: str) -> None:
    """Assign ``tensor`` to ``name``, or ModelError naming ``culprit`` when its shape is not
    the one ``source`` (the config, the file's metadata) gives (``meta``)."""
    if tuple(tensor.shape) != tuple(meta.shape):
        raise ModelError(f"{culprit} is {list(tensor.shape)}, its {source} says "
                         f"{list(meta.shape)}")
    assign(model, name, tensor)


def complete(model: torch.nn.Module, missing: set[str], where: str, what: str) -> None:
    """Tie the tied weights once every other is read, or ModelError naming the missing."""
    if missing:
        names = sorted(missing)
        raise ModelError(f"{where}: weights missing from {what}: {', '.join(names[:3])}"
                         + (" ..." if len(names) > 3 else ""))
    if getattr(model, "all_tied_weights_keys", None):
        model.tie_weights()


def make_buffers(model: torch.nn.Module) -> None:
    """The buffers the config makes (rotary frequencies), computed as the module's init does."""
    for name, module in model.named_modules():
        meta = [b for b, t in module._buffers.items() if t is not None and t.is_meta]
        if not meta:
            continue
        if getattr(module, "config", None) is None:
            raise ModelError(f"buffer {name}.{meta[0]} is not stored and cannot be computed")
        fresh = type(module)(module.config)                  # on the CPU, the real values
        for b in meta:
            module._buffers[b] = fresh._buffers[b]


def read_lean(path: Path, cls: type, dtype: torch.dtype, take: Take = take_stored,
              model: torch.nn.Module | None = None) -> torch.nn.Module:
    """The folder's model of class ``cls`` (``model``: that one, still on the meta device) on
    the CPU in ``dtype``, in eval mode; ModelError."""
    model = empty_model(cls, path) if model is None else model
    fill(model, path, dtype, take)
    make_buffers(model)
    model.config.dtype, model.config._name_or_path = dtype, str(path)
    return model.eval()
