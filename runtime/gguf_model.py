"""A GGUF file's model read lean: its family's class built on the meta device from the mapped
config, then each tensor taken from the file's memory map one at a time, renamed from
llama.cpp's names (the gguf package's table), Q and K of llama un-permuted (llama.cpp's
converter interleaves their rotary halves), Q8_0 requantized per output channel into the int8
pairs the native panels take (docs/decisions/gguf-q8.md), and cast as it is assigned."""
from __future__ import annotations

import numpy as np
import torch

from inkling.runtime.checkpoint_reader import (as_runtime, complete, family_class,
                                               make_buffers, place)
from inkling.runtime import int8_panels, panel_cache, weights_choice
from inkling.runtime.errors import ModelError
from inkling.runtime.gguf_file import ROPE_FREQS, GgufFile
from inkling.runtime.gguf_tokenizer import text_fields
from inkling.runtime.int8_panels import is_panelled, kept_or_quantized
from inkling.runtime.int8_weights import dequantize, quantize_rows
from inkling.runtime.model_runtime import ModelRuntime
from inkling.runtime.model_setup import compact_forward
from inkling.runtime.thread_choice import ThreadChoice



def gguf_names(model: torch.nn.Module, arch: str, layers: int) -> dict[str, str]:
    """llama.cpp's tensor name -> the model's, for every weight the model states."""
    import gguf  # lazy: only where a GGUF file is read
    kind = {name: a for a, name in gguf.MODEL_ARCH_NAMES.items()}[arch]
    table = gguf.get_tensor_name_map(kind, layers)
    names = {}
    for name in model.state_dict(keep_vars=True):
        stored = table.get_name(name, try_suffixes=(".weight", ".bias"))
        if stored is not None:
            names[stored] = name
    return names


def unpermute(w: torch.Tensor, heads: int) -> torch.Tensor:
    """The inverse of llama.cpp's ``LlamaModel.permute`` of a Q or K weight (or bias)."""
    return w.reshape(heads, w.shape[0] // heads // 2, 2, *w.shape[1:]).swapaxes(1, 2) \
        .reshape(w.shape)


def as_torch(t, first: int = 0, end: int | None = None) -> torch.Tensor:
    """A reader tensor's values (its rows ``first`` .. ``end``), copied out of the memory map
    (Q8_0 dequantized to float32)."""
    import gguf  # lazy: as gguf_names
    shape = tuple(int(d) for d in reversed(t.shape.tolist()))
    data = t.data if first == 0 and end is None else t.data[first:end]
    shape = (data.shape[0], *shape[1:]) if len(shape) > 1 else shape
    kind = t.tensor_type.name
    if kind == "BF16":
        return torch.from_numpy(np.array(data).view(np.int16)).view(torch.bfloat16) \
            .reshape(shape)
    if kind == "Q8_0":
        return torch.from_numpy(gguf.quants.dequantize(data, t.tensor_type)).reshape(shape)
    return torch.from_numpy(np.array(data)).reshape(shape)


def tensors(file: GgufFile, names: dict[str, str], int8: dict,
            panels: dict[str, torch.Tensor] | None = None,
            cached: dict[str, torch.Tensor] | None = None):
    """(llama.cpp's name, the model's, its tensor) of each of the file's weights, un-permuted
    where llama. ``panels`` given: each projection, embedding and output layer quantized into
    its int8 panels by rows (int8_panels.py; those in ``cached``, kept from the last start,
    as they are), a meta tensor in its place. Else a Q8_0 one is
    requantized per output channel, its pair in ``int8`` and its tensor those values, as an
    int8 folder's (runtime/int8_weights.py)."""
    cfg = file.config
    for t in file.reader.tensors:
        if t.name == ROPE_FREQS:
            continue
        name = names.get(t.name)
        if name is None:
            raise ModelError(f"model {file.path}: tensor {t.name} is not a weight of its "
                             f"{cfg['architectures'][0]}")
        heads = _permuted_heads(cfg, t.name)
        shape = tuple(int(d) for d in reversed(t.shape.tolist()))
        if panels is not None and is_panelled(name, shape):
            rows = (lambda a, b, t=t: as_torch(t, a, b)) if heads is None else \
                (lambda a, b, t=t, h=heads: unpermute(as_torch(t), h)[a:b])
            panels[name] = kept_or_quantized(name, rows, shape, cached or {})
            yield t.name, name, torch.empty(shape, device="meta")
            continue
        tensor = as_torch(t) if heads is None else unpermute(as_torch(t), heads)
        if t.tensor_type.name == "Q8_0" and is_panelled(name, shape):
            q, scale = quantize_rows(tensor)
            int8[name] = (q, scale)
            tensor = dequantize(q, scale)
        yield t.name, name, tensor


def _permuted_heads(cfg: dict, stored: str) -> int | None:
    """The heads llama.cpp's converter permuted the rows of ``stored`` by (llama's Q and K)."""
    if cfg["model_type"] != "llama":
        return None
    if stored.endswith(("attn_q.weight", "attn_q.bias")):
        return cfg["num_attention_heads"]
    if stored.endswith(("attn_k.weight", "attn_k.bias")):
        return cfg["num_key_value_heads"]
    return None


def read_gguf(file: GgufFile, dtype: torch.dtype, device: torch.device,
              weights: str = "float", forward: str = "auto") -> torch.nn.Module:
    """The file's model on ``device`` in ``dtype``, in eval mode, as int8 panels where
    model.weights ``weights`` asks for them (``int8_panels.wanted``); ModelError naming the
    file."""
    cfg = file.config
    cls = family_class(cfg["model_type"])
    config = cls.config(cfg, file.path)
    config._attn_implementation = "sdpa"
    with torch.device("meta"):
        model = cls(config)
    lean = weights_choice.wanted(weights, model, device, dtype, forward,
                              file.checkpoint.params, f"model {file.path}")
    wanted = dict(model.state_dict(keep_vars=True))
    tied = dict(getattr(model, "all_tied_weights_keys", {}))
    seen, int8, panels = set(), {}, {} if lean else None
    kept = panel_cache.cache_file(file.path) if lean else None
    cached = panel_cache.read(kept) if lean else {}
    names = gguf_names(model, file.value("general.architecture"), cfg["num_hidden_layers"])
    for stored, name, tensor in tensors(file, names, int8, panels, cached):
        place(model, wanted[name], name, as_runtime(tensor, dtype),
              f"model {file.path}: tensor {stored}", "metadata")
        seen.add(name)
    complete(model, set(wanted) - seen - set(tied), f"model {file.path}", "the file")
    make_buffers(model)
    divide_frequencies(model, file)
    model.config.dtype, model.config._name_or_path = dtype, str(file.path)
    if lean:
        if any(panels[name] is not cached.get(name) for name in panels):
            panel_cache.write(kept, panels)
        int8_panels.install(model, panels)
        return model.eval()
    if int8:
        model.inkling_int8 = int8
    return model.to(device).eval()


def divide_frequencies(model: torch.nn.Module, file: GgufFile) -> None:
    """llama3 rope: each rotary frequency divided by the file's ROPE_FREQS, as llama.cpp does."""
    found = [t for t in file.reader.tensors if t.name == ROPE_FREQS]
    if not found:
        return
    factors = as_torch(found[0]).float()
    for module in model.modules():
        for buffer in ("inv_freq", "original_inv_freq"):
            inv = module._buffers.get(buffer)
            if inv is not None:
                if inv.shape != factors.shape:
                    raise ModelError(f"model {file.path}: {ROPE_FREQS} is {list(factors.shape)},"
                                     f" the rotary frequencies {list(inv.shape)}")
                module._buffers[buffer] = inv / factors


def new_runtime(file: GgufFile, model: torch.nn.Module, device: torch.device,
                dtype: torch.dtype, threads: ThreadChoice | None) -> ModelRuntime:
    """The runtime of the file's laid-out ``model``, its text fields from the file's metadata."""
    compact, refused = compact_forward(model, file.path)
    return ModelRuntime(path=file.path, model=model, device=device, dtype=dtype, compact=compact,
                        compact_refusal=refused, threads=threads, **text_fields(file))
