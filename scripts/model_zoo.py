#!/usr/bin/env python3
"""The model zoo: random-weight Hugging Face folders at real families' public shapes, with
their real tokenizers, made here for tests and benchmarks (no weights can be downloaded).

The tokenizers come from llama.cpp's vocab-only GGUF files, which the llama-cpp-python
sdist (pinned) vendors with reference encodings (``.inp`` / ``.out``); each tokenizer.json
is built from a file's metadata with the family's own pre-tokenizer and checked against
those encodings. The sdist also brings llama.cpp's ``convert_hf_to_gguf.py`` (with its
``conversion`` and ``gguf-py`` folders), kept for converting zoo folders to GGUF.

    python scripts/model_zoo.py                         tiny and layers2 of every model
    python scripts/model_zoo.py --models qwen2.5-coder-0.5b --variants full
    python scripts/model_zoo.py --list | --check

Everything goes under ``$INKLING_ZOO`` (default ``~/.cache/inkling/zoo``); nothing of it is
committed. API for tests and benchmarks: ``model_dir(name, variant)``, ``gguf_file(name,
variant, outtype)`` (the folder converted by llama.cpp), ``tokenizer(family)``,
``check_tokenizer(family)``, ``sources()``; failures raise ``ZooError`` (one line).
"""
from __future__ import annotations

import argparse
import contextlib
import copy
import fcntl
import hashlib
import json
import os
import shutil
import struct
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

ZOO_VERSION = 2                    # bump when what a folder holds changes: folders are remade
TOKENIZER_VERSION = 1              # bump when what a tokenizer holds changes: rebuilt
SDIST_NAME = "llama-cpp-python"
SDIST_VERSION = "0.3.36"
SDIST_PIN = f"{SDIST_NAME}=={SDIST_VERSION}"
VENDOR = "vendor/llama.cpp"
VOCABS = ("qwen2", "deepseek-coder", "starcoder", "llama-bpe")
VARIANTS = ("tiny", "layers2", "full")


class ZooError(Exception):
    """The zoo cannot be made: one line that says why."""


def zoo_root() -> Path:
    return Path(os.environ.get("INKLING_ZOO") or Path.home() / ".cache" / "inkling" / "zoo")


def _say(msg: str) -> None:
    print(f"model_zoo: {msg}", file=sys.stderr, flush=True)


_HELD: set[str] = set()


@contextlib.contextmanager
def _locked(root: Path):
    """One maker at a time per zoo (tests in several processes share it); re-entrant."""
    key = str(root.resolve())
    if key in _HELD:
        yield
        return
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".lock", "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        _HELD.add(key)
        try:
            yield
        finally:
            _HELD.discard(key)
            fcntl.flock(f, fcntl.LOCK_UN)


# ---------------------------------------------------------------- the sdist's files

def _wanted(name: str) -> bool:
    """The sdist members the zoo keeps: the four vocab files with their references and the
    GGUF converter with what it imports."""
    prefix, _, rest = name.partition("/")
    if not rest.startswith(VENDOR + "/"):
        return False
    rest = rest[len(VENDOR) + 1:]
    if rest == "convert_hf_to_gguf.py" or rest.startswith(("gguf-py/", "conversion/")):
        return True
    return any(rest in (f"models/ggml-vocab-{v}.gguf", f"models/ggml-vocab-{v}.gguf.inp",
                        f"models/ggml-vocab-{v}.gguf.out") for v in VOCABS)


def _download(dest: Path) -> Path:
    """The pinned sdist, downloaded once by pip into ``dest``."""
    found = sorted(dest.glob(f"{SDIST_NAME.replace('-', '_')}-{SDIST_VERSION}.tar.gz"))
    if found:
        return found[0]
    dest.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
           "-d", str(dest), SDIST_PIN]
    try:
        import scikit_build_core  # noqa: F401  lazy: only to choose pip's build isolation
        cmd.insert(cmd.index("-d"), "--no-build-isolation")
    except ImportError:
        pass
    _say(f"downloading the {SDIST_PIN} sdist")
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ZooError(f"pip could not be run to download {SDIST_PIN}: {exc}") from None
    found = sorted(dest.glob(f"{SDIST_NAME.replace('-', '_')}-{SDIST_VERSION}.tar.gz"))
    if done.returncode != 0 or not found:
        lines = [l for l in (done.stderr or done.stdout).splitlines() if l.strip()]
        why = lines[-1].strip() if lines else f"exit {done.returncode}"
        raise ZooError(f"could not download {SDIST_PIN} (no network or no pip?): {why}")
    return found[0]


def sources(root: Path | None = None) -> Path:
    """The extracted llama.cpp files (models/, convert_hf_to_gguf.py, conversion/, gguf-py/)."""
    root = root or zoo_root()
    out = root / f"llama.cpp-{SDIST_VERSION}"
    if (out / "sources.json").is_file():
        return out
    with _locked(root):
        if (out / "sources.json").is_file():
            return out
        sdist = _download(root / "sdist")
        _say(f"extracting the vocab files and the GGUF converter from {sdist.name}")
        tmp = Path(tempfile.mkdtemp(prefix=".extract-", dir=root))
        tmp.chmod(0o755)
        try:
            with tarfile.open(sdist) as tar:
                members = [m for m in tar.getmembers() if m.isfile() and _wanted(m.name)]
                for m in members:
                    target = tmp / m.name.split("/", 1)[1][len(VENDOR) + 1:]
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(tar.extractfile(m).read())
        except (OSError, tarfile.TarError) as exc:
            shutil.rmtree(tmp, ignore_errors=True)
            raise ZooError(f"{sdist} cannot be read: {exc}") from None
        missing = [v for v in VOCABS if not (tmp / f"models/ggml-vocab-{v}.gguf").is_file()]
        if missing:
            shutil.rmtree(tmp, ignore_errors=True)
            raise ZooError(f"{sdist.name} has no vocab file for {', '.join(missing)}")
        (tmp / "sources.json").write_text(json.dumps(
            {"sdist": SDIST_PIN, "sha256": _sha256(sdist), "files": len(members)}, indent=1))
        shutil.rmtree(out, ignore_errors=True)
        tmp.rename(out)
    return out


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


# ---------------------------------------------------------------- tokenizers

# Qwen2.5(-Coder)'s special tokens after Qwen2's three, at their ids, with their "special"
# flags, as recalled from the public tokenizer (not read from a file here): the qwen2 vocab
# file is Qwen2's, where ids 151646 and up are [PAD] fillers and there are no FIM tokens.
QWEN25_SPECIALS = [
    ("<|object_ref_start|>", True), ("<|object_ref_end|>", True), ("<|box_start|>", True),
    ("<|box_end|>", True), ("<|quad_start|>", True), ("<|quad_end|>", True),
    ("<|vision_start|>", True), ("<|vision_end|>", True), ("<|vision_pad|>", True),
    ("<|image_pad|>", True), ("<|video_pad|>", True), ("<tool_call>", False),
    ("</tool_call>", False), ("<|fim_prefix|>", False), ("<|fim_middle|>", False),
    ("<|fim_suffix|>", False), ("<|fim_pad|>", False), ("<|repo_name|>", False),
    ("<|file_sep|>", False),
]
QWEN25_FIRST = 151646


@dataclass(frozen=True)
class TokenizerSpec:
    """A tokenizer: the vocab file it is built from, the BOS it adds, what it appends."""
    vocab: str
    bos: str | None = None                          # the token the tokenizer adds first
    extra: tuple[tuple[str, bool], ...] = ()        # (content, special) from ``first`` on
    first: int = 0


TOKENIZERS = {
    "qwen2": TokenizerSpec("qwen2"),
    "qwen2.5": TokenizerSpec("qwen2", extra=tuple(QWEN25_SPECIALS), first=QWEN25_FIRST),
    "deepseek-coder": TokenizerSpec("deepseek-coder", bos="<｜begin▁of▁sentence｜>"),
    "starcoder": TokenizerSpec("starcoder"),
    "llama-bpe": TokenizerSpec("llama-bpe", bos="<|begin_of_text|>"),
}
def read_vocab(path: Path) -> dict:
    """The tokenizer metadata of a GGUF file: tokens, token types, merges, pre type."""
    try:
        import gguf  # lazy: a dev extra, needed only where the zoo is made
    except ImportError:
        raise ZooError("the gguf package is not installed "
                       "(pip install gguf, or ./scripts/setup.sh --dev)") from None
    reader = gguf.GGUFReader(str(path))

    def value(key, default=None):
        f = reader.fields.get(key)
        return default if f is None else f.contents()
    if value("tokenizer.ggml.model") != "gpt2":
        raise ZooError(f"{path.name}: not a byte-level BPE vocabulary")
    return {"tokens": value("tokenizer.ggml.tokens"), "types": value("tokenizer.ggml.token_type"),
            "merges": value("tokenizer.ggml.merges"), "pre": value("tokenizer.ggml.pre"),
            "bos": value("tokenizer.ggml.bos_token_id"), "eos": value("tokenizer.ggml.eos_token_id")}


def build_tokenizer(spec: TokenizerSpec, vocab_file: Path):
    """A byte-level BPE ``tokenizers.Tokenizer`` from a vocab file's metadata, the spec's
    tokens appended (inkling's GGUF tokenizer, runtime/gguf_tokenizer.py)."""
    from inkling.runtime.errors import ModelError  # lazy: keeps --help and --list light
    from inkling.runtime.gguf_tokenizer import USER_DEFINED, bpe_tokenizer  # lazy: as above
    meta = read_vocab(vocab_file)
    entries = list(zip(meta["tokens"], meta["types"]))
    if spec.extra:
        entries = entries[:spec.first] + [(t, USER_DEFINED) for t, _ in spec.extra]
    try:
        return bpe_tokenizer(entries, meta["merges"], meta["pre"], spec.bos, dict(spec.extra))
    except ModelError as exc:
        raise ZooError(f"{vocab_file.name}: {exc}") from None


def reference_tests(vocab_file: Path) -> list[tuple[str, list[int]]]:
    """llama.cpp's reference encodings of a vocab file: (text, ids) pairs, as its
    tests/test-tokenizer-0 reads them (no BOS, special tokens not parsed)."""
    raw = Path(f"{vocab_file}.inp").read_bytes().decode("utf-8")
    outs = Path(f"{vocab_file}.out").read_text(encoding="utf-8").split("\n")
    texts = raw.split("\n__ggml_vocab_test__\n")
    if texts and texts[-1] == "":
        texts.pop()
    outs = outs[:len(texts)]
    if len(texts) != len(outs):
        raise ZooError(f"{vocab_file.name}: .inp and .out hold different numbers of tests")
    return [(t, [int(x) for x in o.split()]) for t, o in zip(texts, outs)]


_TOKENIZERS: dict = {}


def tokenizer(family: str, root: Path | None = None):
    """The zoo's tokenizer of ``family`` (a key of TOKENIZERS), built once per process."""
    if family not in TOKENIZERS:
        raise ZooError(f"no tokenizer {family!r} (known: {', '.join(TOKENIZERS)})")
    from tokenizers import Tokenizer  # lazy: keeps --help and --list free of the import
    root = root or zoo_root()
    src = sources(root)
    key = (family, str(root))
    if key in _TOKENIZERS:
        return _TOKENIZERS[key]
    saved = root / f"tokenizers-v{TOKENIZER_VERSION}" / f"{family}.json"
    if not saved.is_file():            # reading a vocab file is slow: built once per zoo
        spec = TOKENIZERS[family]
        _say(f"building the {family} tokenizer from ggml-vocab-{spec.vocab}.gguf")
        tok = build_tokenizer(spec, src / f"models/ggml-vocab-{spec.vocab}.gguf")
        saved.parent.mkdir(parents=True, exist_ok=True)
        tmp = saved.with_suffix(f".{os.getpid()}.tmp")
        tok.save(str(tmp))
        tmp.replace(saved)
    _TOKENIZERS[key] = Tokenizer.from_file(str(saved))
    return _TOKENIZERS[key]


def check_tokenizer(family: str, root: Path | None = None) -> tuple[int, int, list[str]]:
    """(vectors equal, vectors, the texts that differ) of ``family`` against its references."""
    tok = tokenizer(family, root)
    vocab_file = sources(root) / f"models/ggml-vocab-{TOKENIZERS[family].vocab}.gguf"
    tests = reference_tests(vocab_file)
    bad = [text for text, ids in tests if tok.encode(text, add_special_tokens=False).ids != ids]
    return len(tests) - len(bad), len(tests), bad


# ---------------------------------------------------------------- model folders

@dataclass(frozen=True)
class ModelSpec:
    """A zoo model: its public config.json, tokenizer and side files, as recalled."""
    config: dict
    tokenizer: str                                   # a key of TOKENIZERS
    tokenizer_config: dict
    generation_config: dict | None = None
    note: str = ""


def _qwen25_coder(hidden: int, intermediate: int, layers: int, heads: int) -> dict:
    return {"architectures": ["Qwen2ForCausalLM"], "attention_dropout": 0.0,
            "bos_token_id": 151643, "eos_token_id": 151643, "hidden_act": "silu",
            "hidden_size": hidden, "initializer_range": 0.02, "intermediate_size": intermediate,
            "max_position_embeddings": 32768, "max_window_layers": layers, "model_type": "qwen2",
            "num_attention_heads": heads, "num_hidden_layers": layers, "num_key_value_heads": 2,
            "rms_norm_eps": 1e-06, "rope_scaling": None, "rope_theta": 1000000.0,
            "sliding_window": 32768, "tie_word_embeddings": True, "torch_dtype": "bfloat16",
            "use_cache": True, "use_sliding_window": False, "vocab_size": 151936}


QWEN_TOKENIZER_CONFIG = {
    "add_prefix_space": False, "bos_token": None, "clean_up_tokenization_spaces": False,
    "eos_token": "<|endoftext|>", "errors": "replace", "model_max_length": 32768,
    "pad_token": "<|endoftext|>", "split_special_tokens": False,
    "tokenizer_class": "Qwen2Tokenizer", "unk_token": None,
    "additional_special_tokens": ["<|im_start|>", "<|im_end|>", "<|object_ref_start|>",
                                  "<|object_ref_end|>", "<|box_start|>", "<|box_end|>",
                                  "<|quad_start|>", "<|quad_end|>", "<|vision_start|>",
                                  "<|vision_end|>", "<|vision_pad|>", "<|image_pad|>",
                                  "<|video_pad|>"]}
QWEN_GENERATION = {"bos_token_id": 151643, "do_sample": False, "eos_token_id": 151643,
                   "max_new_tokens": 2048}

# Configs as recalled from the public config.json of each model (not read from a file here).
MODELS = {
    "qwen2.5-coder-0.5b": ModelSpec(_qwen25_coder(896, 4864, 24, 14), "qwen2.5",
                                    QWEN_TOKENIZER_CONFIG, QWEN_GENERATION),
    "qwen2.5-coder-1.5b": ModelSpec(_qwen25_coder(1536, 8960, 28, 12), "qwen2.5",
                                    QWEN_TOKENIZER_CONFIG, QWEN_GENERATION),
    "deepseek-coder-1.3b-base": ModelSpec(
        {"architectures": ["LlamaForCausalLM"], "bos_token_id": 32013, "eos_token_id": 32014,
         "hidden_act": "silu", "hidden_size": 2048, "initializer_range": 0.02,
         "intermediate_size": 5504, "max_position_embeddings": 16384, "model_type": "llama",
         "num_attention_heads": 16, "num_hidden_layers": 24, "num_key_value_heads": 16,
         "pretraining_tp": 1, "rms_norm_eps": 1e-06,
         "rope_scaling": {"factor": 4.0, "type": "linear"}, "rope_theta": 100000,
         "tie_word_embeddings": False, "torch_dtype": "bfloat16", "use_cache": True,
         "vocab_size": 32256},
        "deepseek-coder",
        {"add_bos_token": True, "add_eos_token": False, "bos_token": "<｜begin▁of▁sentence｜>",
         "clean_up_tokenization_spaces": False, "eos_token": "<｜end▁of▁sentence｜>",
         "legacy": True, "model_max_length": 16384, "pad_token": "<｜end▁of▁sentence｜>",
         "tokenizer_class": "LlamaTokenizerFast", "unk_token": None},
        {"_from_model_config": True, "bos_token_id": 32013, "eos_token_id": 32014}),
    "starcoder2-3b": ModelSpec(
        {"architectures": ["Starcoder2ForCausalLM"], "attention_dropout": 0.1,
         "residual_dropout": 0.1, "embedding_dropout": 0.1, "bos_token_id": 0,
         "eos_token_id": 0, "hidden_act": "gelu_pytorch_tanh", "hidden_size": 3072,
         "initializer_range": 0.018042, "intermediate_size": 12288,
         "max_position_embeddings": 16384, "mlp_type": "default", "model_type": "starcoder2",
         "norm_epsilon": 1e-05, "norm_type": "layer_norm", "num_attention_heads": 24,
         "num_hidden_layers": 30, "num_key_value_heads": 2, "rope_theta": 999999.4420358813,
         "sliding_window": 4096, "tie_word_embeddings": True, "torch_dtype": "bfloat16",
         "use_bias": True, "use_cache": True, "vocab_size": 49152},
        "starcoder",
        {"add_prefix_space": False, "bos_token": "<|endoftext|>",
         "clean_up_tokenization_spaces": True, "eos_token": "<|endoftext|>",
         "model_max_length": 1000000000000000019884624838656, "tokenizer_class": "GPT2Tokenizer",
         "unk_token": "<|endoftext|>", "vocab_size": 49152,
         "additional_special_tokens": ["<|endoftext|>", "<fim_prefix>", "<fim_middle>",
                                       "<fim_suffix>", "<fim_pad>", "<repo_name>", "<file_sep>"]},
        {"_from_model_config": True, "bos_token_id": 0, "eos_token_id": 0},
        note="the public checkpoint is float32; the zoo writes bfloat16 like the others"),
    "llama-3.2-1b": ModelSpec(
        {"architectures": ["LlamaForCausalLM"], "attention_bias": False,
         "attention_dropout": 0.0, "bos_token_id": 128000, "eos_token_id": 128001,
         "head_dim": 64, "hidden_act": "silu", "hidden_size": 2048, "initializer_range": 0.02,
         "intermediate_size": 8192, "max_position_embeddings": 131072, "mlp_bias": False,
         "model_type": "llama", "num_attention_heads": 32, "num_hidden_layers": 16,
         "num_key_value_heads": 8, "pretraining_tp": 1, "rms_norm_eps": 1e-05,
         "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                          "original_max_position_embeddings": 8192, "rope_type": "llama3"},
         "rope_theta": 500000.0, "tie_word_embeddings": True, "torch_dtype": "bfloat16",
         "use_cache": True, "vocab_size": 128256},
        "llama-bpe",
        {"bos_token": "<|begin_of_text|>", "clean_up_tokenization_spaces": True,
         "eos_token": "<|end_of_text|>", "model_input_names": ["input_ids", "attention_mask"],
         "model_max_length": 131072, "tokenizer_class": "PreTrainedTokenizerFast"},
        {"bos_token_id": 128000, "do_sample": True, "eos_token_id": 128001,
         "temperature": 0.6, "top_p": 0.9}),
}
TINY_HEAD_DIM = 16                 # every tiny width a multiple of 32: GGUF Q8_0 quantizes it all


def variant_config(config: dict, variant: str) -> dict:
    """The config of a variant: ``full`` as is, ``layers2`` with two layers, ``tiny`` with two
    layers and small dimensions: the family's heads-per-KV-head ratio kept (two KV heads where
    grouped, eight heads where not), head size TINY_HEAD_DIM, the vocabulary and every other
    field as they are."""
    if variant not in VARIANTS:
        raise ZooError(f"no variant {variant!r} (known: {', '.join(VARIANTS)})")
    cfg = copy.deepcopy(config)
    if variant == "full":
        return cfg
    cfg["num_hidden_layers"] = 2
    if "max_window_layers" in cfg:
        cfg["max_window_layers"] = 2
    if variant == "tiny":
        ratio = config["num_attention_heads"] // config["num_key_value_heads"]
        kv = 8 if ratio == 1 else 2
        cfg.update(num_attention_heads=kv * ratio, num_key_value_heads=kv,
                   hidden_size=kv * ratio * TINY_HEAD_DIM,
                   intermediate_size=2 * kv * ratio * TINY_HEAD_DIM)
        if "head_dim" in cfg:
            cfg["head_dim"] = TINY_HEAD_DIM
    return cfg


def tensor_shapes(config: dict) -> dict[str, tuple[int, ...]]:
    """The checkpoint's tensor names and shapes (transformers' model on the meta device; a
    tied output layer is not stored, as save_pretrained leaves it out)."""
    import torch  # lazy: only where folders are written
    from transformers import AutoConfig, AutoModelForCausalLM  # lazy: as torch
    from transformers.utils import logging as hf_logging  # lazy: as torch
    hf_logging.set_verbosity_error()
    cfg = {k: copy.deepcopy(v) for k, v in config.items()     # transformers edits nested
           if k not in ("architectures", "torch_dtype")}          # dicts (rope_scaling) in place
    hf_config = AutoConfig.for_model(cfg.pop("model_type"), **cfg)
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(hf_config)
    shapes = {name: tuple(t.shape) for name, t in model.state_dict().items()}
    if config.get("tie_word_embeddings"):
        shapes.pop("lm_head.weight", None)
    return dict(sorted(shapes.items()))


def _tensor_seed(seed: int, name: str) -> int:
    return int.from_bytes(hashlib.sha256(f"{seed}:{name}".encode()).digest()[:8], "little") >> 1


def _tensor_chunks(name: str, shape: tuple[int, ...], seed: int, std: float):
    """The bfloat16 bytes of one random tensor, in row blocks: normal(0, std) weights, norm
    weights near one, biases near zero (none exactly so: a forward that drops them differs)."""
    import torch  # lazy: only where folders are written
    gen = torch.Generator().manual_seed(_tensor_seed(seed, name))
    rows = shape[0]
    per_row = max(1, int(torch.tensor(shape[1:]).prod().item())) if len(shape) > 1 else 1
    step = max(1, (1 << 23) // per_row)
    is_norm = "norm" in name and name.endswith(".weight")
    for start in range(0, rows, step):
        block = torch.randn((min(step, rows - start), *shape[1:]), generator=gen) * std
        if is_norm:
            block += 1.0
        yield block.to(torch.bfloat16).view(torch.int16).numpy().tobytes()


def write_safetensors(path: Path, shapes: dict[str, tuple[int, ...]], seed: int,
                      std: float) -> None:
    """A bfloat16 safetensors file written tensor by tensor: at most one block in memory."""
    header, offset = {"__metadata__": {"format": "pt"}}, 0
    for name, shape in shapes.items():
        size = 2
        for d in shape:
            size *= d
        header[name] = {"dtype": "BF16", "shape": list(shape), "data_offsets": [offset, offset + size]}
        offset += size
    head = json.dumps(header, separators=(",", ":")).encode()
    head += b" " * (-len(head) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(head)))
        f.write(head)
        for name, shape in shapes.items():
            for chunk in _tensor_chunks(name, shape, seed, std):
                f.write(chunk)


def folder_name(name: str, variant: str, seed: int = 0) -> str:
    return f"{name}-{variant}" + (f"-seed{seed}" if seed else "")


def manifest(name: str, variant: str, seed: int, root: Path) -> dict:
    spec = MODELS[name]
    src = json.loads((sources(root) / "sources.json").read_text())
    return {"made_by": "scripts/model_zoo.py", "zoo_version": ZOO_VERSION, "model": name,
            "variant": variant, "seed": seed, "weights": "random, bfloat16",
            "config": "as recalled from the public config.json, then the variant's changes",
            "tokenizer": spec.tokenizer, "vocab_file": f"ggml-vocab-{TOKENIZERS[spec.tokenizer].vocab}.gguf",
            "sdist": src["sdist"], "sdist_sha256": src["sha256"], "note": spec.note}


def _write_json(path: Path, value: dict) -> None:
    path.write_text(json.dumps(value, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def write_model(out: Path, name: str, variant: str, seed: int, root: Path) -> None:
    """Every file of one zoo folder into ``out``, the manifest (zoo.json) last."""
    spec = MODELS[name]
    cfg = variant_config(spec.config, variant)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer(spec.tokenizer, root).save(str(out / "tokenizer.json"))
    _write_json(out / "config.json", cfg)
    _write_json(out / "tokenizer_config.json", spec.tokenizer_config)
    if spec.generation_config is not None:
        _write_json(out / "generation_config.json", spec.generation_config)
    write_safetensors(out / "model.safetensors", tensor_shapes(cfg), seed,
                      cfg.get("initializer_range", 0.02))
    _write_json(out / "zoo.json", manifest(name, variant, seed, root))


def model_dir(name: str, variant: str = "tiny", seed: int = 0, root: Path | None = None) -> Path:
    """The zoo folder of ``name`` at ``variant``, made first if it is not there (ZooError)."""
    if name not in MODELS:
        raise ZooError(f"no model {name!r} (known: {', '.join(MODELS)})")
    variant_config(MODELS[name].config, variant)
    root = root or zoo_root()
    out = root / "models" / folder_name(name, variant, seed)
    if _complete(out):
        return out
    sources(root)
    with _locked(root):
        if _complete(out):
            return out
        _say(f"writing {out.name}")
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}-", dir=out.parent))
        tmp.chmod(0o755)                           # as any model folder, not mkdtemp's own
        try:
            write_model(tmp, name, variant, seed, root)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        shutil.rmtree(out, ignore_errors=True)
        tmp.rename(out)
    return out


GGUF_TYPES = ("f32", "f16", "bf16", "q8_0")


def gguf_file(name: str, variant: str = "tiny", outtype: str = "f32",
              root: Path | None = None) -> Path:
    """The zoo folder of ``name`` converted to GGUF by llama.cpp's own convert_hf_to_gguf.py
    (with its vendored gguf-py) at ``outtype``, made once (ZooError)."""
    if outtype not in GGUF_TYPES:
        raise ZooError(f"no GGUF type {outtype!r} (known: {', '.join(GGUF_TYPES)})")
    root = root or zoo_root()
    folder = model_dir(name, variant, root=root)
    out = root / "gguf" / f"{folder.name}-{outtype}.gguf"
    stamp = json.loads((folder / "zoo.json").read_text()).get("zoo_version")
    if out.is_file() and out.with_suffix(".json").is_file() and json.loads(
            out.with_suffix(".json").read_text()).get("zoo_version") == stamp:
        return out
    with _locked(root):
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_suffix(f".{os.getpid()}.tmp")
        _say(f"converting {folder.name} to {out.name}")
        cmd = [sys.executable, str(sources(root) / "convert_hf_to_gguf.py"), str(folder),
               "--outtype", outtype, "--outfile", str(tmp)]
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise ZooError(f"llama.cpp's converter could not be run: {exc}") from None
        if done.returncode != 0 or not tmp.is_file():
            lines = [l for l in done.stderr.splitlines() if l.strip()]
            tmp.unlink(missing_ok=True)
            raise ZooError(f"llama.cpp's converter failed on {folder.name}: "
                           f"{lines[-1] if lines else done.returncode}")
        tmp.replace(out)
        _write_json(out.with_suffix(".json"), {"zoo_version": stamp, "outtype": outtype})
    return out


def _complete(out: Path) -> bool:
    try:
        return json.loads((out / "zoo.json").read_text()).get("zoo_version") == ZOO_VERSION
    except (OSError, json.JSONDecodeError):
        return False


# ---------------------------------------------------------------- the command line

def _names(text: str, known, what: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    bad = [n for n in names if n not in known]
    if bad:
        raise ZooError(f"no {what} {', '.join(bad)} (known: {', '.join(known)})")
    return names


def _list(root: Path) -> None:
    for name, spec in MODELS.items():
        made = [v for v in VARIANTS if _complete(root / "models" / folder_name(name, v))]
        print(f"{name:26} {spec.config['architectures'][0]:22} tokenizer {spec.tokenizer:15}"
              f" made: {', '.join(made) or '-'}")
    print(f"zoo: {root}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default=",".join(MODELS), help="comma-separated (default: all)")
    ap.add_argument("--variants", default="tiny,layers2",
                    help="comma-separated of tiny, layers2, full (default: tiny,layers2)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--list", action="store_true", help="the models and what is made; nothing made")
    ap.add_argument("--check", action="store_true",
                    help="check each tokenizer against llama.cpp's reference encodings")
    args = ap.parse_args(argv)
    root = zoo_root()
    try:
        if args.list:
            _list(root)
            return 0
        models = _names(args.models, MODELS, "model")
        variants = _names(args.variants, VARIANTS, "variant")
        sources(root)
        if args.check:
            failed = False
            for family in TOKENIZERS:
                ok, total, bad = check_tokenizer(family, root)
                failed |= ok != total
                print(f"tokenizer {family}: {ok} of {total} reference encodings equal"
                      + (f"; differ: {[t[:30] for t in bad]}" if bad else ""))
            if failed:
                return 1
        for name in models:
            for variant in variants:
                print(model_dir(name, variant, args.seed, root), flush=True)
    except ZooError as exc:
        _say(str(exc))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
