"""The torch side of loading a model folder that ``model_loader.py`` checked.
Device, dtype, weights, layout, tokenizer, stop ids, and the forward model.forward asks for."""
from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Callable

import torch
from huggingface_hub.errors import StrictDataclassError
from safetensors import SafetensorError
from tokenizers import Tokenizer

from inkling.runtime import int8_panels, native_llama, panel_cache, weights_choice
from inkling.runtime.checkpoint_reader import Family, empty_model, family_class, read_lean
from inkling.runtime.compact_llama import CompactLlama, refusal
from inkling.runtime.cpu_layout import lay_out_for_cpu
from inkling.runtime.errors import ModelError
from inkling.runtime.fim import added_tokens, bos_id, detect_format, stop_ids
from inkling.runtime.int8_weights import is_int8_folder, load_int8_model
from inkling.runtime.llama_modules import LlamaModules
from inkling.runtime.model_runtime import ModelRuntime
from inkling.runtime.thread_choice import ThreadChoice

Progress = Callable[[str, float], None]
log = logging.getLogger("inkling.runtime.model_loader")   # the loader's messages


def pick_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise ModelError(f"device {name!r} was asked for but CUDA is not available")
    return torch.device(name)


def pick_dtype(name: str, device: torch.device) -> torch.dtype:
    if name == "auto":
        if device.type == "cuda":
            return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
        return torch.float32
    return {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}[name]


def read_model(path: Path, dtype: torch.dtype, device: torch.device, weights: str = "float",
               forward: str = "auto", params: int = 0) -> torch.nn.Module:
    """The folder's model, on ``device``, in eval mode: a family of the reader's table read
    lean (``checkpoint_reader.py``), as int8 panels where model.weights ``weights`` asks
    (``int8_panels.wanted``; ``params``: its stored size), another through transformers'
    ``from_pretrained``."""
    cls = family_class(json.loads((path / "config.json").read_text()).get("model_type", ""))
    try:
        if cls is not None:
            model = empty_model(cls, path)
            if weights_choice.wanted(weights, model, device, dtype, forward, params,
                                  f"model {path}"):
                return read_panelled(path, cls, dtype, model)
        if is_int8_folder(path):
            model = load_int8_model(path, dtype, cls)
        elif cls is not None:
            model = read_lean(path, cls, dtype)
        else:
            from transformers import AutoModelForCausalLM  # lazy: other families only
            model = AutoModelForCausalLM.from_pretrained(
                path, dtype=dtype, local_files_only=True, use_safetensors=True,
                trust_remote_code=False, attn_implementation="sdpa")
    except StrictDataclassError as exc:              # transformers' config refused a field
        why = " ".join(str(exc).split()).split(". Errors:")[0]
        raise ModelError(f"model config {path / 'config.json'}: {why}") from None
    except (OSError, ValueError, KeyError, SafetensorError) as exc:
        raise ModelError(f"model {path} cannot be loaded: {str(exc).splitlines()[0]}") from None
    model.to(device).eval()
    return model


def read_panelled(path: Path, cls: Family, dtype: torch.dtype, model: torch.nn.Module
                  ) -> torch.nn.Module:
    """The folder's ``model`` (on the meta device) with its projections, embedding and output
    layer as int8 panels: a float folder's quantized as read, or as the last start kept them
    (``panel_cache.py``), an int8 folder's as stored."""
    panels: dict[str, torch.Tensor] = {}
    if is_int8_folder(path):
        model = read_lean(path, cls, dtype, int8_panels.take_int8(panels), model)
    else:
        kept = panel_cache.cache_file(path)
        cached = panel_cache.read(kept)
        model = read_lean(path, cls, dtype, int8_panels.take_float(panels, cached), model)
        if any(panels[name] is not cached.get(name) for name in panels):
            panel_cache.write(kept, panels)
    int8_panels.install(model, panels)
    return model


def lay_out(model: torch.nn.Module, device: torch.device, forward: str = "auto") -> None:
    """Lay the layers out for the CPU there and pack GQA; ``forward`` native: no oneDNN packing."""
    if int8_panels.is_lean(model):
        return                                       # its panels are the native forward's
    if device.type == "cpu":
        lay_out_for_cpu(model, pack=forward != "native")
    if not isinstance(model, LlamaModules):          # (its reference packs GQA when built)
        from inkling.runtime.gqa_attention import use_packed_gqa  # lazy: transformers' modeling
        use_packed_gqa(model)


def compact_forward(model: torch.nn.Module, path: Path) -> tuple[CompactLlama | None, str]:
    """(the compact forward over ``model``, "") or (None, why not: transformers' forward only,
    or the native one where ``model`` holds int8 panels only)."""
    why = int8_panels.LEAN_ONLY if int8_panels.is_lean(model) else refusal(model)
    if why is not None:
        log.info("%s: transformers' forward only (no compact forward: %s)", path, why)
        return None, why
    return CompactLlama(model), ""


def new_runtime(path: Path, cfg: dict, model: torch.nn.Module, device: torch.device,
                dtype: torch.dtype, threads: ThreadChoice | None) -> ModelRuntime:
    """The runtime of the folder's laid-out ``model``; ``threads``: None on a GPU."""
    compact, refused = compact_forward(model, path)
    return ModelRuntime(path=path, model=model, device=device, dtype=dtype, compact=compact,
                        compact_refusal=refused, threads=threads,
                        **text_fields(path, cfg, _inkling_meta(path)))


def _inkling_meta(path: Path) -> dict:
    meta = path / "inkling.json"
    return json.loads(meta.read_text()) if meta.is_file() else {}


def text_fields(path: Path, cfg: dict, meta: dict) -> dict:
    """The tokenizer, BOS, FIM format and order, stop ids (the family's own end tokens, the
    eos ids) and context limit, from the folder's tokenizer files, config and inkling.json."""
    tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
    fim = detect_format(tokenizer, meta.get("fim_family"))
    order = meta.get("fim_order") or (fim.orders[0] if fim else "none")
    if fim is None:
        log.warning("%s: no fill-in-the-middle tokens in its vocabulary: it completes from "
                    "the prefix alone", path)
    elif order not in fim.orders:
        raise ModelError(f"{path / 'inkling.json'}: fim_order {order!r}: {fim.known_orders()}")
    eos = [*_ids(cfg.get("eos_token_id")),
           *_ids(_json_file(path / "generation_config.json").get("eos_token_id"))]
    context = int(meta.get("trained_context") or cfg.get("max_position_embeddings") or 2048)
    return {"tokenizer": tokenizer, "fim": fim, "fim_order": order,
            "bos_id": bos_id(tokenizer, _json_file(path / "tokenizer_config.json")),
            "stop_ids": stop_ids(fim, added_tokens(tokenizer), eos),
            "context_limit": min(context, 8192)}


def _ids(value) -> list[int]:
    """A config's token id field (an id, a list of ids, or none) as a list."""
    return [value] if isinstance(value, int) else [v for v in value or () if isinstance(v, int)]


def _json_file(path: Path) -> dict:
    try:
        found = json.loads(path.read_text()) if path.is_file() else {}
    except (OSError, ValueError) as exc:
        raise ModelError(f"{path} cannot be read: {exc}") from None
    return found if isinstance(found, dict) else {}


def settle_forward(runtime: ModelRuntime, forward: str, report: Progress) -> None:
    """Resolve ``forward`` at load: native builds here, auto never waits and logs why not native."""
    if forward in ("auto", "native") and runtime.compact is not None:
        report("loading the native forward" if forward == "auto" or native_llama.built() else
               "building the native forward (once per machine, about 30 s)", 0.9)
    if runtime.forward_kind(forward) == "native" or forward != "auto" or runtime.compact is None:
        return                         # (no compact forward: compact_forward said why)
    if runtime.forwards.build_pending():
        report("the compact forward serves: the native one is building", 0.95)
        log.warning("%s: %s", runtime.path, runtime.auto_note())
    elif runtime.forwards.build_failed():
        log.warning("%s: model.forward auto runs the compact forward, about 1.5 times "
                    "slower a token: %s (set model.forward compact to choose it)",
                    runtime.path, runtime.auto_note())
    else:
        log.info("%s: model.forward auto runs the %s forward (%s)", runtime.path,
                 runtime.forward_kind(forward), runtime.auto_note())
