"""What a load chose, as one plain value: the family, the forward and why, the weights' format and
bytes, the device and dtype, the FIM format and order, the encoder's rule and drafting's state.
The CLI prints it as a line, ``--json`` and ``inkling/stats`` as an object (docs/runtime.md)."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch

from inkling.runtime.int8_panels import is_lean
from inkling.runtime.model_runtime import ModelRuntime


@dataclass(frozen=True)
class ModelDescription:
    """One load's choices; ``as_dict`` is the JSON object, its keys stable."""
    path: str
    family: str               # config.json's model_type
    parameters: int           # as the checkpoint stores them, each tensor once
    forward: str              # the forward model.forward resolved to
    forward_reason: str       # why that forward
    weights: str              # the checkpoint's format: float32 | bfloat16 | float16 | int8
    held_as: str              # in memory: int8 panels (model.weights int8), else the dtype
    checkpoint_bytes: int     # its tensors' bytes on disk
    resident_bytes: int       # the weights' bytes in memory (layouts, panels), each storage once
    device: str
    dtype: str                # the type the forward computes in
    fim: str                  # the fill-in-the-middle format's family, or none
    fim_order: str            # psm | spm, or none
    encoder_rule: str         # where prompt lines are cut: newline | line-start | non-space | whole
    drafting: str             # what runs: suffix | none | prompt-lookup
    drafting_state: str       # measured | cached | not measured yet | forced
    drafting_reason: str

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)

    def line(self) -> str:
        """The one line the CLI prints to standard error at load."""
        return (f"inkling: model {self.path}: {self.family}, {self.parameters / 1e6:.1f} M "
                f"parameters, {self.weights} weights ({_mb(self.checkpoint_bytes)} on disk, "
                f"held as {self.held_as}, {_mb(self.resident_bytes)} resident), {self.dtype} "
                f"on {self.device}; "
                f"{self.forward} forward ({self.forward_reason}); FIM {self.fim} "
                f"{self.fim_order}; encoder {self.encoder_rule}; drafting {self.drafting} "
                f"({self.drafting_state}: {self.drafting_reason})")


def describe(runtime: ModelRuntime, forward: str,
             drafting: tuple[str, str, str]) -> ModelDescription:
    """``runtime`` as loaded with model.forward ``forward``; ``drafting``: (mode, state, why)."""
    kind = runtime.forward_kind(forward)
    checkpoint = runtime.checkpoint
    return ModelDescription(
        path=str(runtime.path), family=str(getattr(runtime.model.config, "model_type", "?")),
        parameters=runtime.params, forward=kind, forward_reason=forward_reason(runtime, forward),
        weights=checkpoint.format if checkpoint else _dtype(_first_dtype(runtime.model)),
        held_as="int8" if is_lean(runtime.model) else _dtype(runtime.dtype),
        checkpoint_bytes=checkpoint.bytes if checkpoint else 0,
        resident_bytes=resident_bytes(runtime), device=str(runtime.device),
        dtype=_dtype(runtime.dtype), fim=runtime.fim.family if runtime.fim else "none",
        fim_order=runtime.fim_order if runtime.fim else "none",
        encoder_rule=runtime.encoder.rule, drafting=drafting[0], drafting_state=drafting[1],
        drafting_reason=drafting[2])


def forward_reason(runtime: ModelRuntime, forward: str) -> str:
    """Why ``forward`` resolved as it did: asked for by name, or auto's note."""
    if forward != "auto":
        return f"model.forward is {forward}"
    return runtime.auto_note() or "model.forward auto: nothing refuses the native forward here"


def resident_bytes(runtime: ModelRuntime) -> int:
    """Bytes of every tensor the model and its forwards hold, each storage counted once."""
    model, seen, total = runtime.model, set(), 0
    found = [*model.parameters(), *model.buffers(),
             *(v for m in model.modules() for v in vars(m).values() if torch.is_tensor(v)),
             *_tensors(getattr(model, "inkling_int8", {})),
             *_tensors(getattr(model, "inkling_panels", None) or {})]
    native = runtime.forwards.native if runtime.forwards is not None else None
    if native is not None and not isinstance(native, str):
        found += _tensors(vars(native))
    for t in found:
        if t.is_meta:
            continue                                     # a lean model's place-holder
        key, size = _storage(t)
        if key not in seen:
            seen.add(key)
            total += size
    return total


def _tensors(value) -> list[torch.Tensor]:
    """The tensors in ``value``: a tensor, or a list, tuple or dict of them (nested)."""
    if torch.is_tensor(value):
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _tensors(v)]
    return []


def _storage(t: torch.Tensor) -> tuple[tuple, int]:
    """(a key of ``t``'s storage, its bytes); an opaque (oneDNN) tensor is its own storage."""
    if t.is_mkldnn:
        return ("opaque", id(t)), t.numel() * t.element_size()
    storage = t.untyped_storage()
    return ("storage", storage.data_ptr()), storage.nbytes()


def _first_dtype(model: torch.nn.Module) -> torch.dtype:
    return next(model.parameters()).dtype


def _dtype(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def _mb(n: int) -> str:
    return f"{n / 1e6:.1f} MB"
