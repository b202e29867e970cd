"""Load any local Hugging Face causal LM directory offline (safetensors, no remote code)."""
from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Callable

from inkling.runtime.errors import ModelError
from inkling.runtime.gguf_file import is_gguf, open_gguf
from inkling.runtime.load_heap import give_back, reading_weights
from inkling.runtime.model_files import check_weights, read_config
from inkling.runtime.model_size import SMALL_MODEL_PARAMS, WEIGHT_FORMATS, checkpoint_of

# Families whose attention uses rotary position embeddings in the half-split layout.
ROTARY_MODEL_TYPES = frozenset({
    "llama", "qwen2", "qwen3", "mistral", "mixtral", "starcoder2", "gemma", "gemma2",
    "qwen2_moe", "qwen3_moe", "olmo", "olmo2", "granite", "phi3", "cohere", "stablelm",
})
# Families known to have learned, ALiBi or no positional encoding at all.
NON_ROTARY_MODEL_TYPES = frozenset({
    "gpt2", "gpt_bigcode", "bloom", "mpt", "opt", "gpt_neo", "bert", "roberta", "falcon_alibi",
    "codegen", "t5", "xglm",
})

Progress = Callable[[str, float], None]
log = logging.getLogger(__name__)


def check_model_dir(path: Path) -> dict:
    """Everything that can be checked without importing torch; returns config.json."""
    if not path.exists():
        raise ModelError(f"model path {path} does not exist")
    if not path.is_dir():
        raise ModelError(f"model path {path} is not a folder")
    cfg = read_config(path)
    model_type = cfg.get("model_type", "?")
    has_rope_fields = any(k in cfg for k in ("rope_theta", "rope_parameters", "rope_scaling"))
    if model_type in NON_ROTARY_MODEL_TYPES or cfg.get("alibi") or (
            model_type not in ROTARY_MODEL_TYPES and not has_rope_fields):
        raise ModelError(
            f"model {path} (model_type {model_type!r}) has no rotary position embeddings; "
            "inkling needs a RoPE model (Llama, Qwen2, Mistral, StarCoder2, DeepSeek-Coder families)")
    if cfg.get("auto_map"):
        raise ModelError(f"model {path} needs remote code (auto_map in config.json); "
                         "inkling does not run code shipped with a model")
    weights = sorted(path.glob("*.safetensors"))
    if not weights:
        raise ModelError(f"model {path} has no .safetensors weights "
                         "(inkling loads safetensors only, never pickled .bin files)")
    for file in weights:
        check_weights(file)
    if not (path / "tokenizer.json").is_file():
        raise ModelError(f"model {path} has no tokenizer.json (a fast tokenizer is required)")
    return cfg


def pick_threads(requested: int, device, n_params: int) -> int | None:
    """The CPU threads: ``requested``, else one (small model, then measured) or all; GPU: None."""
    if device.type != "cpu":
        return None
    if requested > 0:
        return requested
    return 1 if n_params < SMALL_MODEL_PARAMS else usable_cores()


def thread_choice(requested: int, base: int | None, n_params: int):
    """The runtime's ThreadChoice: ``base`` fixed, or measured against every core; None on a GPU."""
    from inkling.runtime.thread_choice import ThreadChoice   # lazy: it imports torch
    if base is None:
        return None
    cores = usable_cores()
    adaptive = requested == 0 and n_params < SMALL_MODEL_PARAMS and cores > base
    return ThreadChoice(base, cores if adaptive else 0)


def usable_cores() -> int:
    """The cores this process may run on (its affinity), at most ``OMP_NUM_THREADS`` where set."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:
        cores = os.cpu_count() or 1
    limit = os.environ.get("OMP_NUM_THREADS", "").strip()
    if limit.isdigit() and int(limit) > 0:
        cores = min(cores, int(limit))
    return max(1, cores)


def quiet_transformers() -> None:
    """Offline, no warnings below errors and no progress bars from transformers and the hub,
    read from the environment when they are first imported (often never: runtime/model_config.py)."""
    for name, value in (("HF_HUB_OFFLINE", "1"), ("TRANSFORMERS_OFFLINE", "1"),
                        ("TRANSFORMERS_VERBOSITY", "error"),
                        ("HF_HUB_DISABLE_PROGRESS_BARS", "1")):
        os.environ.setdefault(name, value)


def load_runtime(path: str | Path, device: str = "auto", dtype: str = "auto",
                 progress: Progress | None = None, threads: int = 0, forward: str = "auto",
                 weights: str = "auto"):
    """Load a folder or a GGUF file into a :class:`ModelRuntime`, which owns torch's thread
    count; ``weights``: model.weights (float, int8 panels, or auto: int8 for a model of
    SMALL_MODEL_PARAMS or more that the native forward runs); ModelError."""
    if weights not in WEIGHT_FORMATS:
        raise ModelError(f"model.weights must be one of {', '.join(WEIGHT_FORMATS)}, "
                         f"got {weights!r}")
    path = Path(path).expanduser().resolve()
    report = progress or (lambda stage, fraction: None)
    report("checking model folder", 0.0)
    gguf = open_gguf(path) if is_gguf(path) else None       # a .gguf file: runtime/gguf_*.py
    cfg = gguf.config if gguf else check_model_dir(path)
    quiet_transformers()
    report("importing torch", 0.1)
    import torch  # lazy: slow, so after the folder check and under the progress bar
    from inkling.runtime import model_setup   # lazy: it imports torch
    dev = model_setup.pick_device(device)
    dt = model_setup.pick_dtype(dtype, dev)
    from inkling.runtime.int8_weights import is_int8_folder   # lazy: it imports torch
    # counted as stored, not as laid out
    checkpoint = gguf.checkpoint if gguf else checkpoint_of(path, is_int8_folder(path))
    report("reading weights", 0.7)
    from inkling.runtime import gguf_model   # lazy: it imports torch, as model_setup
    with reading_weights():
        model = gguf_model.read_gguf(gguf, dt, dev, weights, forward) if gguf else \
            model_setup.read_model(path, dt, dev, weights, forward, checkpoint.params)
        n_threads = pick_threads(threads, dev, checkpoint.params)
        if n_threads is not None:
            torch.set_num_threads(n_threads)
        model_setup.lay_out(model, dev, forward)
    choice = thread_choice(threads, n_threads, checkpoint.params)
    runtime = gguf_model.new_runtime(gguf, model, dev, dt, choice) if gguf else \
        model_setup.new_runtime(path, cfg, model, dev, dt, choice)
    runtime.checkpoint = checkpoint
    give_back()                          # the tokenizer's parse, freed but kept by the heap
    model_setup.settle_forward(runtime, forward, report)
    report("ready", 1.0)
    if runtime.encoder.rule == "whole":
        log.info("%s: prompt windows are tokenized whole at every completion (%s)", path,
                 runtime.encoder.reason or "no safe line cut")
    return runtime
