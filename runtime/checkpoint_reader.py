"""A model folder read lean: its family's class built on the meta device, then each stored
tensor read from the safetensors files and cast to the runtime's dtype as it is assigned, so
there is no random init and no whole second copy (docs/decisions/lean-reader.md)."""
from __future__ import annotations

import importlib
import json
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import torch
from safetensors import SafetensorError, safe_open

from inkling.runtime import model_config
from inkling.runtime.errors import ModelError
from inkling.runtime.model_files import weights_refusal
from inkling.runtime.rotary import static_rope

@dataclass(frozen=True)
class Family:
    """A family of the reader's table, called as its class is: ``config_class`` and
    ``family(config)`` -> the model on the current device. Llama's shapes (``llama_modules``)
    are held in inkling's own modules, unless a rotary scaling changes with the length;
    the others in transformers' class (only its module imported)."""
    name: str                      # transformers.models.<name>
    model_class: str               # its causal-LM class
    config_name: str               # its config class
    own_modules: bool = False      # held by llama_modules.LlamaModules

    @property
    def config_class(self) -> type:
        module = f"transformers.models.{self.name}.configuration_{self.name}"
        return getattr(importlib.import_module(module), self.config_name)

    def transformers_class(self) -> type:
        module = f"transformers.models.{self.name}.modeling_{self.name}"
        return getattr(importlib.import_module(module), self.model_class)

    def config(self, fields: dict, where: Path):
        """The config that ``fields`` (config.json's) make for the model at ``where``: held
        plain (``model_config``) for inkling's own modules, else transformers' config."""
        fields = {k: v for k, v in fields.items() if k != "model_type"}
        if self.own_modules:
            return model_config.resolved(self, fields, where)
        return self.config_class(**fields)

    def __call__(self, config) -> torch.nn.Module:
        if self.own_modules and static_rope(config):
            from inkling.runtime.llama_modules import LlamaModules  # lazy: it imports us
            return LlamaModules(config, self)
        return self.transformers_class()(model_config.transformers_config(config))


# model_type -> its family: the families whose checkpoints name their modules' tensors
FAMILIES = {
    "llama": Family("llama", "LlamaForCausalLM", "LlamaConfig", own_modules=True),
    "mistral": Family("mistral", "MistralForCausalLM", "MistralConfig", own_modules=True),
    "qwen2": Family("qwen2", "Qwen2ForCausalLM", "Qwen2Config", own_modules=True),
    "qwen3": Family("qwen3", "Qwen3ForCausalLM", "Qwen3Config"),
    "starcoder2": Family("starcoder2", "Starcoder2ForCausalLM", "Starcoder2Config"),
}

Tensors = dict[str, safe_open]          # a stored tensor's name -> its file's open handle
# (the folder's tensors, a stored name) -> (the model's name, its tensor), or None: not a weight
Take = Callable[[Tensors, str], "tuple[str, torch.Tensor] | None"]


def family_class(model_type: str) -> Family | None:
    """The table's family for ``model_type``, or None."""
    return FAMILIES.get(model_type)


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


def empty_model(cls: Family | type, path: Path) -> torch.nn.Module:
    """``cls`` at the folder's config on the meta device: no memory, no init."""
    if isinstance(cls, Family):
        config = cls.config(json.loads((path / "config.json").read_text()), path)
    else:
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


def read_lean(path: Path, cls: Family | type, dtype: torch.dtype, take: Take = take_stored,
              model: torch.nn.Module | None = None) -> torch.nn.Module:
    """The folder's model of class ``cls`` (``model``: that one, still on the meta device) on
    the CPU in ``dtype``, in eval mode; ModelError."""
    model = empty_model(cls, path) if model is None else model
    fill(model, path, dtype, take)
    make_buffers(model)
    model.config.dtype, model.config._name_or_path = dtype, str(path)
    return model.eval()
