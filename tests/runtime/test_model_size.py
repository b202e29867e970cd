"""The parameter count comes from the checkpoint's safetensors headers, not from the model as
laid out for the CPU (packed weights hold no parameter, a tied embedding laid out twice), and
the size decisions (threads, the native forward under auto) read it."""
import dataclasses
import json

import pytest
import torch

from conftest import make_tiny_model
from inkling.runtime import cpu_layout
from inkling.runtime.errors import ModelError
from inkling.runtime.model_loader import load_runtime
from inkling.runtime.model_size import (NATIVE_AUTO_MAX_PARAMS, SMALL_MODEL_PARAMS, Checkpoint,
                                        checkpoint_of)
from inkling.training.int8_convert import convert


def llama_params(cfg: dict) -> int:
    """A Llama's parameters from its config.json, by the architecture's arithmetic."""
    h, inter, layers, vocab = (cfg["hidden_size"], cfg["intermediate_size"],
                               cfg["num_hidden_layers"], cfg["vocab_size"])
    head_dim = cfg.get("head_dim") or h // cfg["num_attention_heads"]
    q, kv = cfg["num_attention_heads"] * head_dim, cfg["num_key_value_heads"] * head_dim
    layer = 2 * h + h * q + 2 * h * kv + q * h + 3 * h * inter
    head = 0 if cfg.get("tie_word_embeddings") else vocab * h
    return vocab * h + layers * layer + h + head


def laid_out_params(model: torch.nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def test_the_bundled_model_counts_what_its_checkpoint_holds(bundled_model_dir):
    cfg = json.loads((bundled_model_dir / "config.json").read_text())
    rt = load_runtime(bundled_model_dir, device="cpu")
    packed = [m for m in rt.model.modules() if isinstance(m, cpu_layout.PackedLinear)]
    if torch.backends.mkldnn.is_available():
        assert packed, "the bundled model's output layer is packed on this CPU"
    assert rt.checkpoint == Checkpoint(llama_params(cfg), 2 * llama_params(cfg), "float16")
    assert rt.params == llama_params(cfg)


@pytest.mark.parametrize("pack_min", [cpu_layout.PACK_MIN_WEIGHTS, 1 << 12])
def test_a_tied_folder_counts_its_stored_tensors_once(tiny_model_dir, monkeypatch, pack_min):
    """Unpacked, the tied embedding is laid out as two parameters; packed, the projections are
    none: the count stays the checkpoint's."""
    if pack_min != cpu_layout.PACK_MIN_WEIGHTS and not torch.backends.mkldnn.is_available():
        pytest.skip("oneDNN packing is not available on this CPU")
    monkeypatch.setattr(cpu_layout, "PACK_MIN_WEIGHTS", pack_min)
    cfg = json.loads((tiny_model_dir / "config.json").read_text())
    assert cfg["tie_word_embeddings"]
    rt = load_runtime(tiny_model_dir, device="cpu", dtype="float32")
    assert rt.params == llama_params(cfg) == rt.checkpoint.params
    assert laid_out_params(rt.model) != rt.params       # what counting the layout would say
    assert rt.checkpoint.format == "float32" and rt.checkpoint.bytes == 4 * rt.params


def test_an_int8_folder_counts_its_int8_weights_and_not_their_scales(tiny_model_dir, tmp_path):
    floats = checkpoint_of(tiny_model_dir)
    convert(tiny_model_dir, tmp_path / "q")
    int8 = load_runtime(tmp_path / "q", device="cpu").checkpoint
    assert int8.params == floats.params and int8.format == "int8"
    assert int8.bytes < floats.bytes / 3          # one byte a weight, float32 scales per row


def test_an_unreadable_checkpoint_is_named(tmp_path):
    (tmp_path / "model.safetensors").write_bytes(b"\xff" * 16)
    with pytest.raises(ModelError, match="model file .*model.safetensors cannot be read: "):
        checkpoint_of(tmp_path)


def test_the_size_decisions_read_the_checkpoints_count(tiny_runtime):
    """auto refuses the native forward from NATIVE_AUTO_MAX_PARAMS as the checkpoint counts
    them, whatever the model in memory holds; the loader's threads follow the same count."""
    large = dataclasses.replace(tiny_runtime, forwards=None, checkpoint=Checkpoint(
        NATIVE_AUTO_MAX_PARAMS, 0, "float16"))
    assert laid_out_params(large.model) < SMALL_MODEL_PARAMS
    assert large.forward_kind("auto") == "compact"
    assert large.auto_note().startswith(f"{NATIVE_AUTO_MAX_PARAMS / 1e6:.0f} M parameters")
    below = dataclasses.replace(tiny_runtime, forwards=None, checkpoint=Checkpoint(
        NATIVE_AUTO_MAX_PARAMS - 1, 0, "float16"))
    assert below.forward_kind("auto") == "native"
    small = dataclasses.replace(tiny_runtime, forwards=None)
    assert not small.forwards.note().startswith(f"{small.params / 1e6:.0f} M parameters")

