"""Load any local Hugging Face causal LM directory offline (safetensors, no remote code)."""
from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Callable

from inkling.runtime.errors import ModelError
from inkling.runtime.fim import KNOWN_FORMATS, detect_format

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


def _read_config(path: Path) -> dict:
    cfg_path = path / "config.json"
    if not cfg_path.is_file():
        raise ModelError(f"model path {path} has no config.json (is it a Hugging Face model folder?)")
    try:
        return json.loads(cfg_path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise ModelError(f"model config {cfg_path} cannot be read: {exc}") from None


def check_model_dir(path: Path) -> dict:
    """Everything that can be checked without importing torch; returns config.json."""
    if not path.exists():
        raise ModelError(f"model path {path} does not exist")
    if not path.is_dir():
        raise ModelError(f"model path {path} is not a folder")
    cfg = _read_config(path)
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
    if not any(path.glob("*.safetensors")):
        raise ModelError(f"model {path} has no .safetensors weights "
                         "(inkling loads safetensors only, never pickled .bin files)")
    if not (path / "tokenizer.json").is_file():
        raise ModelError(f"model {path} has no tokenizer.json (a fast tokenizer is required)")
    return cfg


def _pick_device(name: str):
    import torch
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise ModelError(f"device {name!r} was asked for but CUDA is not available")
    return torch.device(name)


def _pick_dtype(name: str, device):
    import torch
    if name == "auto":
        if device.type == "cuda":
            return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
        return torch.float32
    return {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}[name]


def _inkling_meta(path: Path) -> dict:
    meta = path / "inkling.json"
    return json.loads(meta.read_text()) if meta.is_file() else {}


def _compact_forward(model, path: Path):
    """(the compact forward over ``model``'s weights, "") or (None, why not): models
    outside the Llama family run transformers' forward only."""
    from inkling.runtime.compact_llama import CompactLlama, refusal
    why = refusal(model)
    if why is not None:
        log.info("%s: transformers' forward only (no compact forward: %s)", path, why)
        return None, why
    return CompactLlama(model), ""


def _settle_forward(runtime, forward: str, report: Progress) -> None:
    """Resolve ``forward`` now, not at the first completion. ``native`` builds the native
    module here where it is not built (about 30 s, once per machine), with progress;
    ``native`` (or ``compact``) that cannot run is the load's error. ``auto`` never waits
    for a compile: where the module is not built it runs the compact forward, a build
    started in the background for the next start; it says why it is not native: a warning
    where that costs speed (the module is building or did not build), a note where the
    model is outside what the native layers cover (e.g. on a GPU); and in
    ``inkling/stats``."""
    from inkling.runtime.native_llama import built
    if forward in ("auto", "native") and runtime.compact is not None:
        report("loading the native forward" if forward == "auto" or built() else
               "building the native forward (once per machine, about 30 s)", 0.9)
    if runtime.forward_kind(forward) == "native" or forward != "auto" or runtime.compact is None:
        return                         # (no compact forward: _compact_forward said why)
    if runtime.build_pending():
        report("the compact forward serves: the native one is building", 0.95)
        log.warning("%s: %s", runtime.path, runtime.auto_note())
    elif runtime.build_failed():
        log.warning("%s: model.forward auto runs the compact forward, about 1.5 times "
                    "slower a token: %s (set model.forward compact to choose it)",
                    runtime.path, runtime.auto_note())
    else:
        log.info("%s: model.forward auto runs the %s forward (%s)", runtime.path,
                 runtime.forward_kind(forward), runtime.auto_note())


SMALL_MODEL_PARAMS = 100_000_000


def pick_threads(requested: int, device, n_params: int) -> int | None:
    """The CPU threads of the forward: ``requested`` when given; else one for a model
    under SMALL_MODEL_PARAMS (where another process holds the other core, every step on
    two threads waits for it: twice as slow a completion on the bundled model) and every
    core for a larger one. For the small model the native forward then measures one
    thread against every core as it runs (``thread_choice``). None on a GPU (the host
    threads are left as they are)."""
    if device.type != "cpu":
        return None
    if requested > 0:
        return requested
    return 1 if n_params < SMALL_MODEL_PARAMS else usable_cores()


def thread_choice(requested: int, base: int | None, n_params: int):
    """The runtime's thread choice (runtime/thread_choice.py): ``base`` threads fixed, or
    with ``requested`` 0 and a model under SMALL_MODEL_PARAMS on several cores, ``base``
    and every core measured against each other; None on a GPU."""
    from inkling.runtime.thread_choice import ThreadChoice
    if base is None:
        return None
    cores = usable_cores()
    adaptive = requested == 0 and n_params < SMALL_MODEL_PARAMS and cores > base
    return ThreadChoice(base, cores if adaptive else 0)


def usable_cores() -> int:
    """The cores this process may run on (its affinity where the OS says), at most
    ``OMP_NUM_THREADS`` where that is set (a limit the user or a scheduler such as Ray
    gave)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:
        cores = os.cpu_count() or 1
    limit = os.environ.get("OMP_NUM_THREADS", "").strip()
    if limit.isdigit() and int(limit) > 0:
        cores = min(cores, int(limit))
    return max(1, cores)


def load_runtime(path: str | Path, device: str = "auto", dtype: str = "auto",
                 progress: Progress | None = None, threads: int = 0, forward: str = "auto"):
    """Load a model folder into a :class:`ModelRuntime`; raises ModelError with the reason.
    On the CPU this sets torch's thread count for the process (``pick_threads``): the
    runtime is the one owner of it. ``forward`` (model.forward) auto or native builds the
    native forward here, with progress, not at the first completion (``_settle_forward``)."""
    path = Path(path).expanduser().resolve()
    report = progress or (lambda stage, fraction: None)
    report("checking model folder", 0.0)
    cfg = check_model_dir(path)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    # imported here, after the folder is checked (a bad path fails at once) and with the
    # progress bar showing it: torch takes 0.8 to 1.9 s, transformers 1.0 s more
    # (-X importtime); `import inkling.runtime.model_loader` costs neither
    report("importing torch", 0.1)
    import torch
    from tokenizers import Tokenizer
    report("importing transformers", 0.3)
    from transformers import AutoModelForCausalLM
    from transformers.utils import logging as hf_logging
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    from inkling.runtime.model_runtime import ModelRuntime
    dev = _pick_device(device)
    dt = _pick_dtype(dtype, dev)
    report("reading weights", 0.7)
    from .int8_weights import is_int8_folder, load_int8_model
    try:
        model = load_int8_model(path, dt) if is_int8_folder(path) else \
            AutoModelForCausalLM.from_pretrained(
                path, dtype=dt, local_files_only=True, use_safetensors=True,
                trust_remote_code=False, attn_implementation="sdpa")
    except (OSError, ValueError, KeyError) as exc:
        raise ModelError(f"model {path} cannot be loaded: {str(exc).splitlines()[0]}") from None
    model.to(dev).eval()
    n_params = sum(p.numel() for p in model.parameters())
    n_threads = pick_threads(threads, dev, n_params)
    if n_threads is not None:
        torch.set_num_threads(n_threads)
    if dev.type == "cpu":
        from inkling.runtime.cpu_layout import lay_out_for_cpu
        lay_out_for_cpu(model)
    from inkling.runtime.gqa_attention import use_packed_gqa
    use_packed_gqa(model)
    compact, refused = _compact_forward(model, path)
    tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
    meta = _inkling_meta(path)
    fim = detect_format(tokenizer.get_vocab(with_added_tokens=True), meta.get("fim_family"))
    order = meta.get("fim_order") or (fim.orders[0] if fim else "none")
    stop_names = {t for f in KNOWN_FORMATS for t in (*f.end, f.prefix, f.suffix, f.middle)}
    stop_ids = {tokenizer.token_to_id(t) for t in stop_names} - {None}
    eos = cfg.get("eos_token_id")
    stop_ids.update(eos if isinstance(eos, list) else [eos] if isinstance(eos, int) else [])
    context = int(meta.get("trained_context") or cfg.get("max_position_embeddings") or 2048)
    runtime = ModelRuntime(path=path, model=model, tokenizer=tokenizer, fim=fim,
                           fim_order=order, stop_ids=frozenset(stop_ids),
                           context_limit=min(context, 8192), device=dev, dtype=dt,
                           compact=compact, compact_refusal=refused,
                           threads=thread_choice(threads, n_threads, n_params))
    _settle_forward(runtime, forward, report)
    report("ready", 1.0)
    if runtime.encoder.rule == "whole":
        log.info("%s: its pre-tokenizer has no known safe line cuts; prompt windows are "
                 "tokenized whole at every completion", path)
    return runtime
