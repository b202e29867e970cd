"""GGUF model files (runtime/gguf_file.py, gguf_model.py, gguf_tokenizer.py): the zoo's tiny
folders converted by llama.cpp's own convert_hf_to_gguf.py read back as the folder's model
(every weight equal from F32 and BF16 files, so Q and K are un-permuted right), the logits
close from F16 and within Q8_0's error from Q8_0, the tokenizer equal to the folder's
tokenizer.json and to llama.cpp's reference encodings; a K-quant tensor and a truncated file
each one ModelError line naming the file."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from inkling.runtime.errors import ModelError
from inkling.runtime.gguf_file import open_gguf
from inkling.runtime.gguf_model import read_gguf
from inkling.runtime.gguf_tokenizer import text_fields
from inkling.runtime.int8_weights import dequantize
from inkling.runtime.model_setup import read_model
from inkling.runtime.model_setup import text_fields as folder_text_fields
from zoo_models import zoo, zoo_gguf, zoo_model, zoo_tokenizer

INKLING = Path(sys.executable).with_name("inkling")
CPU = torch.device("cpu")
MODELS = ["qwen2.5-coder-0.5b", "llama-3.2-1b", "deepseek-coder-1.3b-base", "starcoder2-3b"]
QK_MODELS = ["qwen2.5-coder-0.5b", "llama-3.2-1b"]      # grouped heads, llama: Q and K permuted
# (not DeepSeek's thirteen added Latin-1 letters: this converter writes them as U+FFFD, so the
# file encodes them by BPE, as llama.cpp does with it)
TEXTS = ["def area(w, h):\n    return w * h\n", "x = 1_000 + 22  # λ → 日本 ✓\n\t\tpass",
         "<|fim_prefix|>a<|fim_suffix|>b<|fim_middle|>", "  leading\n\n\nblank   lines  "]


def _pair(name: str, outtype: str, dtype: torch.dtype = torch.float32):
    """(the folder's model, the GGUF file's model) of zoo model ``name``."""
    folder = read_model(zoo_model(name), dtype, CPU)
    return folder, read_gguf(open_gguf(zoo_gguf(name, outtype)), dtype, CPU)


def _logits(model: torch.nn.Module) -> torch.Tensor:
    ids = torch.randint(0, model.config.vocab_size, (2, 24),
                        generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        return model(ids).logits.float()


def _relative(got: torch.Tensor, want: torch.Tensor) -> float:
    return ((got - want).norm() / want.norm()).item()


def _assert_same_weights(folder: torch.nn.Module, gguf: torch.nn.Module) -> None:
    want, got = folder.state_dict(), gguf.state_dict()
    assert got.keys() == want.keys()
    for name, tensor in want.items():
        assert got[name].dtype == tensor.dtype and torch.equal(got[name], tensor), name
    for (name, a), (_, b) in zip(folder.named_buffers(), gguf.named_buffers()):
        torch.testing.assert_close(b, a, rtol=1e-6, atol=0, msg=name)   # llama3's frequencies


@pytest.mark.parametrize("name", MODELS)
def test_an_f32_file_holds_the_folders_weights_and_logits(name):
    folder, gguf = _pair(name, "f32")
    assert type(gguf) is type(folder)
    _assert_same_weights(folder, gguf)
    assert _relative(_logits(gguf), _logits(folder)) < 1e-5
    assert gguf.config.tie_word_embeddings == folder.config.tie_word_embeddings


@pytest.mark.parametrize("name", QK_MODELS)
def test_a_bf16_file_holds_the_bfloat16_folders_weights(name):
    _assert_same_weights(*_pair(name, "bf16", torch.bfloat16))


@pytest.mark.parametrize("name", QK_MODELS)
def test_f16_and_q8_0_files_give_the_folders_logits_within_their_error(name):
    folder = read_model(zoo_model(name), torch.float32, CPU)
    want = _logits(folder)
    f16 = _relative(_logits(read_gguf(open_gguf(zoo_gguf(name, "f16")), torch.float32, CPU)), want)
    q8 = _relative(_logits(read_gguf(open_gguf(zoo_gguf(name, "q8_0")), torch.float32, CPU)), want)
    assert f16 < 1e-3
    assert q8 < 0.05 and q8 > f16          # Q8_0's blocks round: an error, a small one


@pytest.mark.parametrize("name", MODELS)
def test_the_files_tokenizer_and_text_fields_are_the_folders(name):
    folder_dir = zoo_model(name)
    want = folder_text_fields(folder_dir, json.loads((folder_dir / "config.json").read_text()), {})
    got = text_fields(open_gguf(zoo_gguf(name, "f32")))
    tok = got["tokenizer"]
    for text in TEXTS:
        assert tok.encode(text).ids == want["tokenizer"].encode(text).ids, text
        assert tok.decode(tok.encode(text, add_special_tokens=False).ids,
                          skip_special_tokens=False) == text
    assert (got["bos_id"], got["fim_order"], got["stop_ids"]) == \
        (want["bos_id"], want["fim_order"], want["stop_ids"])
    assert (got["fim"] and got["fim"].family) == (want["fim"] and want["fim"].family)
    assert (got["bos_id"] is not None) == (zoo.TOKENIZERS[zoo.MODELS[name].tokenizer].bos
                                           is not None)


@pytest.mark.parametrize("name", MODELS)
def test_the_files_tokenizer_encodes_llama_cpps_reference_vectors(name):
    family = zoo.MODELS[name].tokenizer
    zoo_tokenizer(family)
    vocab = zoo.sources() / f"models/ggml-vocab-{zoo.TOKENIZERS[family].vocab}.gguf"
    tok = text_fields(open_gguf(zoo_gguf(name, "f32")))["tokenizer"]
    tests = zoo.reference_tests(vocab)
    assert tests
    differ = [t for t, ids in tests if tok.encode(t, add_special_tokens=False).ids != ids]
    assert differ == []


def _one_line(path: Path, *words: str) -> str:
    with pytest.raises(ModelError) as caught:
        read_gguf(open_gguf(path), torch.float32, CPU)
    message = str(caught.value)
    assert "\n" not in message and str(path) in message
    assert all(w in message for w in words), message
    return message


def _write_gguf(path: Path, k_quant: bool = False, tokenizer: str = "gpt2",
                pre: str = "qwen2") -> None:
    """A small llama GGUF file: a K-quant (zeroed Q4_K) second tensor where ``k_quant``."""
    import gguf
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_block_count(1)
    writer.add_tokenizer_model(tokenizer)
    writer.add_tokenizer_pre(pre)
    writer.add_token_list(["a", "b"])
    writer.add_tensor("token_embd.weight", np.zeros((4, 32), np.float32))
    if k_quant:
        writer.add_tensor("blk.0.ffn_down.weight", np.zeros((4, 144), np.uint8),
                          raw_dtype=gguf.GGMLQuantizationType.Q4_K)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def test_a_k_quant_tensor_is_refused_naming_it_its_type_and_what_is_read(tmp_path):
    path = tmp_path / "k.gguf"
    _write_gguf(path, k_quant=True)
    _one_line(path, "blk.0.ffn_down.weight", "Q4_K", "Q8_0", "F16", "convert")


@pytest.mark.parametrize("tokenizer, pre, words", [
    ("llama", "default", ("tokenizer", "'llama'", "gpt2")),
    ("gpt2", "chatglm-bpe", ("pre-tokenizer", "'chatglm-bpe'", "qwen2"))])
def test_a_tokenizer_inkling_cannot_split_is_refused_before_torch(tmp_path, tokenizer, pre,
                                                                 words):
    path = tmp_path / "t.gguf"
    _write_gguf(path, tokenizer=tokenizer, pre=pre)
    with pytest.raises(ModelError) as caught:
        open_gguf(path)
    assert str(path) in str(caught.value) and all(w in str(caught.value) for w in words)


def test_a_truncated_file_is_one_line_naming_it(tmp_path):
    path = tmp_path / "cut.gguf"
    shutil.copy(zoo_gguf("qwen2.5-coder-0.5b", "q8_0"), path)
    with open(path, "r+b") as f:
        f.truncate(path.stat().st_size // 2)
    _one_line(path, "GGUF")
    path.write_bytes(path.read_bytes()[:5000])         # inside the vocabulary's metadata
    _one_line(path, "GGUF")


def test_load_runtime_takes_a_gguf_file_and_its_load_line_says_so():
    from inkling.runtime.model_description import describe
    from inkling.runtime.model_loader import load_runtime
    path = zoo_gguf("qwen2.5-coder-0.5b", "q8_0")
    runtime = load_runtime(path, device="cpu", dtype="float32")
    folder = load_runtime(zoo_model("qwen2.5-coder-0.5b"), device="cpu", dtype="float32")
    assert runtime.path == path and runtime.fim.family == folder.fim.family
    assert runtime.checkpoint.params == folder.checkpoint.params
    line = describe(runtime, "auto", ("none", "forced", "test")).line()
    assert f"model {path}: qwen2," in line and "gguf Q8_0 weights" in line
    ids = runtime.tokenizer.encode("def area(w, h):\n    return").ids
    with torch.no_grad():
        got, want = (rt.model(torch.tensor([ids])).logits.float() for rt in (runtime, folder))
    assert _relative(got, want) < 0.05


@pytest.mark.slow
def test_inkling_complete_refuses_a_k_quant_file_in_one_line(tmp_path):
    path = tmp_path / "k.gguf"
    _write_gguf(path, k_quant=True)
    src = tmp_path / "a.py"
    src.write_text("def f(x):\n    return ")
    run = subprocess.run([str(INKLING), "complete", str(src), "--line", "2", "--col", "12",
                          "--model", str(path)], capture_output=True, text=True, timeout=300)
    assert run.returncode != 0 and "Traceback" not in run.stderr
    lines = [ln for ln in run.stderr.splitlines() if str(path) in ln]
    assert len(lines) == 1 and "Q4_K" in lines[0], run.stderr


def test_a_q8_0_file_holds_its_projections_as_an_int8_folder_would():
    model = read_gguf(open_gguf(zoo_gguf("llama-3.2-1b", "q8_0")), torch.float32, CPU)
    int8 = model.inkling_int8
    assert "model.layers.1.self_attn.k_proj.weight" in int8 and \
        "model.embed_tokens.weight" in int8
    for name, (q, scale) in int8.items():
        assert q.dtype == torch.int8 and torch.equal(model.get_parameter(name),
                                                     dequantize(q, scale)), name
    assert not any("norm" in name for name in int8)


def test_a_q8_0_files_native_forward_runs_int8_panels_as_the_reference():
    """The panels' float products (VNNI's int8 rows: tests/runtime/test_int8_forward.py)."""
    from test_int8_forward import _close, _paths
    from inkling.runtime.model_loader import load_runtime
    from inkling.runtime.native_llama import load_extension
    runtime = load_runtime(zoo_gguf("qwen2.5-coder-0.5b", "q8_0"), device="cpu", dtype="float32")
    assert runtime.native_forward().weights[1].dtype == torch.int8
    ext = load_extension()
    ext.use_vnni(False)
    try:
        outs = _paths(runtime, 90)
    finally:
        ext.use_vnni(True)
    for a, b in zip(outs["reference"], outs["native"]):
        _close(a, b)
