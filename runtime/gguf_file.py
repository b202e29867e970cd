"""A GGUF model file checked before torch sees it: read by the ``gguf`` package's parser (a
numpy memory map, no code run), its tensor types ones inkling reads, its architecture one of
the reader's families, its metadata mapped to that family's transformers config."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inkling.runtime.errors import ModelError
from inkling.runtime.model_size import Checkpoint

SUFFIX = ".gguf"
TENSOR_TYPES = ("F32", "F16", "BF16", "Q8_0")
CONVERT = ("convert it with llama.cpp's convert_hf_to_gguf.py (--outtype q8_0 or f16) or "
           "llama-quantize to Q8_0")
# general.architecture -> (transformers' model_type, its class's name)
ARCHITECTURES = {"llama": ("llama", "LlamaForCausalLM"), "qwen2": ("qwen2", "Qwen2ForCausalLM"),
                 "starcoder2": ("starcoder2", "Starcoder2ForCausalLM")}
ROPE_FREQS = "rope_freqs.weight"        # llama3 rope's per-frequency divisors, not a weight


@dataclass(frozen=True)
class GgufFile:
    """An opened GGUF model: its parser, the transformers config it maps to, its size."""
    path: Path
    reader: Any                     # gguf.GGUFReader
    config: dict                    # as a config.json of its family would hold it
    checkpoint: Checkpoint

    def value(self, key: str, default=None):
        return field(self.reader, key, default)


def is_gguf(path: Path) -> bool:
    return path.suffix.lower() == SUFFIX and not path.is_dir()


def field(reader, key: str, default=None):
    """Metadata ``key``'s value (a number, a string, a list), or ``default`` where absent."""
    found = reader.fields.get(key)
    return default if found is None else found.contents()


def open_gguf(path: Path) -> GgufFile:
    """``path`` parsed and checked; one ModelError naming the file for what inkling cannot load."""
    if not path.is_file():
        raise ModelError(f"model path {path} does not exist")
    try:
        import gguf  # lazy: numpy and yaml only where a GGUF file is given
    except ImportError:
        raise ModelError(f"model {path}: reading GGUF files needs the gguf package "
                         "(pip install gguf)") from None
    try:
        reader = _reader_class(gguf)(str(path))
    except (ValueError, OSError, IndexError, KeyError, UnicodeDecodeError) as exc:
        why = (str(exc).splitlines() or [type(exc).__name__])[0]
        raise ModelError(f"model {path}: not a readable GGUF file ({why}; truncated?)") from None
    for t in reader.tensors:
        if t.tensor_type.name not in TENSOR_TYPES:
            raise ModelError(f"model {path}: tensor {t.name} is {t.tensor_type.name}; inkling "
                             f"reads GGUF tensors of {', '.join(TENSOR_TYPES)}: {CONVERT}")
    check_tokenizer(reader, path)
    return GgufFile(path, reader, hf_config(reader, path), checkpoint(reader))


def check_tokenizer(reader, path: Path) -> None:
    """One ModelError unless the file holds a tokenizer runtime/gguf_tokenizer.py builds."""
    from inkling.runtime.gguf_tokenizer import PRE_ALIASES, PRE_REGEXES  # lazy: tokenizers
    model = field(reader, "tokenizer.ggml.model")
    if model != "gpt2" or "tokenizer.ggml.tokens" not in reader.fields:
        raise ModelError(f"model {path}: its GGUF tokenizer is {model!r}; inkling reads "
                         "byte-level BPE (gpt2) tokenizers only")
    pre = field(reader, "tokenizer.ggml.pre", "default")
    if PRE_ALIASES.get(pre, pre) not in PRE_REGEXES:
        raise ModelError(f"model {path}: its GGUF pre-tokenizer {pre!r} is not one inkling "
                         f"splits as llama.cpp does ({', '.join(PRE_REGEXES)})")


def _reader_class(gguf) -> type:
    """gguf's reader over a plain ndarray view of its memory map (the same mapping): slicing a
    ``np.memmap`` costs a subclass finalization per slice, and the reader slices every string
    of the vocabulary and merges (docs/runtime.md, reading a GGUF file)."""
    import numpy as np  # lazy: as gguf

    class PlainViewReader(gguf.GGUFReader):
        @property
        def data(self):
            return self._plain

        @data.setter
        def data(self, mapped):
            self._plain = mapped.view(np.ndarray)
    return PlainViewReader


def checkpoint(reader) -> Checkpoint:
    """The file's tensors counted once each; its format ``gguf`` and the type of most of them."""
    params, nbytes, by_type = 0, 0, {}
    for t in reader.tensors:
        nbytes += int(t.n_bytes)
        if t.name != ROPE_FREQS:
            params += int(t.n_elements)
            by_type[t.tensor_type.name] = by_type.get(t.tensor_type.name, 0) + int(t.n_elements)
    return Checkpoint(params, nbytes, f"gguf {max(by_type, key=by_type.get, default='?')}")


def hf_config(reader, path: Path) -> dict:
    """The transformers config of the file's family, from its metadata (llama.cpp's keys)."""
    arch = field(reader, "general.architecture")
    if arch not in ARCHITECTURES:
        raise ModelError(f"model {path}: GGUF architecture {arch!r} is not one inkling reads "
                         f"({', '.join(ARCHITECTURES)})")

    def need(key: str):
        value = field(reader, f"{arch}.{key}")
        if value is None:
            raise ModelError(f"model {path}: its GGUF metadata has no {arch}.{key}")
        return value
    names = {t.name for t in reader.tensors}
    heads = int(need("attention.head_count"))
    model_type, cls = ARCHITECTURES[arch]
    tokens = reader.fields.get("tokenizer.ggml.tokens")
    cfg = {"model_type": model_type, "architectures": [cls],
           "hidden_size": int(need("embedding_length")),
           "intermediate_size": int(need("feed_forward_length")),
           "num_hidden_layers": int(need("block_count")), "num_attention_heads": heads,
           "num_key_value_heads": int(field(reader, f"{arch}.attention.head_count_kv", heads)),
           "max_position_embeddings": int(need("context_length")),
           "rope_theta": shortest(field(reader, f"{arch}.rope.freq_base", 10000.0)),
           "vocab_size": int(field(reader, f"{arch}.vocab_size",
                                   len(tokens.data) if tokens else 0)),
           "tie_word_embeddings": "output.weight" not in names,
           "bos_token_id": field(reader, "tokenizer.ggml.bos_token_id"),
           "eos_token_id": field(reader, "tokenizer.ggml.eos_token_id")}
    if arch == "starcoder2":     # llama.cpp runs it without a sliding window: so does inkling
        cfg.update(norm_epsilon=shortest(need("attention.layer_norm_epsilon")),
                   sliding_window=None, use_bias="blk.0.attn_q.bias" in names)
        return cfg
    cfg["rms_norm_eps"] = shortest(need("attention.layer_norm_rms_epsilon"))
    if arch == "qwen2":
        return cfg
    cfg.update(head_dim=int(field(reader, f"{arch}.attention.key_length",
                                  cfg["hidden_size"] // heads)),
               attention_bias="blk.0.attn_q.bias" in names, mlp_bias="blk.0.ffn_up.bias" in names,
               rope_scaling=rope_scaling(reader, arch, path))
    return cfg


def shortest(value: float) -> float:
    """A float32 metadata value as the shortest decimal that rounds to it: as the config it
    was converted from wrote it, not float32's nearest double."""
    import numpy as np  # lazy: as the gguf package, only where a GGUF file is given
    return float(str(np.float32(value)))


def rope_scaling(reader, arch: str, path: Path) -> dict | None:
    """The config's rope_scaling: none or linear (llama3's is the ROPE_FREQS tensor)."""
    kind = field(reader, f"{arch}.rope.scaling.type", "none")
    if kind == "none":
        return None
    if kind == "linear":
        return {"rope_type": "linear",
                "factor": float(field(reader, f"{arch}.rope.scaling.factor"))}
    raise ModelError(f"model {path}: rope scaling {kind!r} is not one inkling reads from GGUF "
                     "(none, linear, llama3)")
