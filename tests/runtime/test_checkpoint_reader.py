"""The lean reader (runtime/checkpoint_reader.py, model_setup.read_model): the same model as
transformers' ``from_pretrained`` (the reference) on the bundled model and the zoo's tiny
folders in float32 and bfloat16, tied embeddings held once, int8 folders by the same route,
and one ModelError line naming a truncated file, a missing or an unexpected tensor."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from conftest import make_tiny_model
from inkling.runtime.checkpoint_reader import FAMILIES, family_class
from inkling.runtime.errors import ModelError
from inkling.runtime.llama_modules import LlamaModules
from inkling.runtime.model_loader import load_runtime
from inkling.runtime.model_setup import read_model
from zoo_models import ZOO_MODELS, zoo_model

INKLING = Path(sys.executable).with_name("inkling")
DTYPES = [torch.float32, torch.bfloat16]
CPU = torch.device("cpu")


def reference(path: Path, dtype: torch.dtype) -> torch.nn.Module:
    from transformers import AutoModelForCausalLM
    return AutoModelForCausalLM.from_pretrained(
        path, dtype=dtype, local_files_only=True, use_safetensors=True,
        attn_implementation="sdpa").eval()


def assert_same_model(path: Path, dtype: torch.dtype) -> None:
    """Every weight, the rotary frequencies and the logits, bit for bit; the Llama shapes held
    in inkling's modules, transformers' class built over them as their reference."""
    ref, lean = reference(path, dtype), read_model(path, dtype, CPU)
    own = ref.config.model_type in ("llama", "mistral", "qwen2")
    assert isinstance(lean, LlamaModules) == own and not lean.training
    assert type(lean.reference() if own else lean) is type(ref)
    ref_state, lean_state = ref.state_dict(), lean.state_dict()
    assert lean_state.keys() == ref_state.keys()
    for name, want in ref_state.items():
        got = lean_state[name]
        assert got.dtype == want.dtype and got.device == want.device, name
        assert torch.equal(got, want), name
    assert torch.equal(lean.model.rotary_emb.inv_freq, ref.model.rotary_emb.inv_freq)
    assert lean.model.rotary_emb.attention_scaling == ref.model.rotary_emb.attention_scaling
    ids = torch.randint(0, ref.config.vocab_size, (2, 24), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        assert torch.equal(lean(ids).logits, ref(ids).logits)
    shared = ref.lm_head.weight.data_ptr() == ref.model.embed_tokens.weight.data_ptr()
    assert (lean.lm_head.weight.untyped_storage().data_ptr() ==
            lean.model.embed_tokens.weight.untyped_storage().data_ptr()) == shared
    assert shared == bool(ref.config.tie_word_embeddings)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_the_bundled_model_is_what_from_pretrained_reads(bundled_model_dir, dtype):
    assert_same_model(bundled_model_dir, dtype)
    lean = read_model(bundled_model_dir, dtype, CPU)
    assert lean.lm_head.weight is lean.model.embed_tokens.weight      # tied: one tensor


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("name", ZOO_MODELS)
def test_a_zoo_folder_is_what_from_pretrained_reads(name, dtype):
    assert_same_model(zoo_model(name), dtype)


def test_the_table_covers_the_zoo_families_and_imports_one_module():
    code = ("import sys; from inkling.runtime.checkpoint_reader import family_class; "
            "family_class('qwen2').config_class; print(sorted(m for m in sys.modules "
            "if m.startswith('transformers.models.') and m.count('.') == 3))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert "transformers.models.qwen2.configuration_qwen2" in out
    assert "modeling_qwen2" not in out and "modeling_llama" not in out
    assert {"llama", "qwen2", "qwen3", "mistral", "starcoder2"} <= set(FAMILIES)
    assert family_class("gemma") is None


def test_importing_model_setup_leaves_transformers_modeling_unloaded():
    code = ("import sys, inkling.runtime.model_setup; print([m for m in "
            "('transformers.conversion_mapping', 'transformers.integrations.finegrained_fp8', "
            "'transformers.modeling_utils', 'transformers.models.auto.modeling_auto') "
            "if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"


def copy_model(src: Path, dest: Path) -> Path:
    shutil.copytree(src, dest)
    return dest


def one_line_error(path: Path, *needles: str) -> str:
    with pytest.raises(ModelError) as caught:
        load_runtime(path, device="cpu", dtype="float32")
    message = str(caught.value)
    assert "\n" not in message and all(n in message for n in needles), message
    return message


def test_a_truncated_weights_file_is_one_error_naming_it(bundled_model_dir, tmp_path):
    d = copy_model(bundled_model_dir, tmp_path / "m")
    shard = d / "model-00001-of-00002.safetensors"
    with open(shard, "r+b") as f:
        f.truncate(shard.stat().st_size // 2)
    one_line_error(d, "model-00001-of-00002.safetensors")


def test_a_garbled_header_is_one_error_naming_the_file(tiny_model_dir, tmp_path):
    d = copy_model(tiny_model_dir, tmp_path / "m")
    (d / "model.safetensors").write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{not json at all")
    one_line_error(d, "model.safetensors")


def test_a_missing_tensor_is_one_error_naming_it(tiny_model_dir, tmp_path):
    d = copy_model(tiny_model_dir, tmp_path / "m")
    tensors = load_file(str(d / "model.safetensors"))
    del tensors["model.layers.1.mlp.up_proj.weight"]
    save_file(tensors, str(d / "model.safetensors"), metadata={"format": "pt"})
    one_line_error(d, "missing", "model.layers.1.mlp.up_proj.weight")


def test_an_unexpected_or_misshapen_tensor_is_one_error_naming_it(tiny_model_dir, tmp_path):
    d = copy_model(tiny_model_dir, tmp_path / "m")
    tensors = load_file(str(d / "model.safetensors"))
    save_file({**tensors, "model.layers.0.mlp.extra.weight": torch.zeros(2, 2)},
              str(d / "model.safetensors"), metadata={"format": "pt"})
    one_line_error(d, "model.layers.0.mlp.extra.weight")
    tensors["model.norm.weight"] = torch.ones(3)
    save_file(tensors, str(d / "model.safetensors"), metadata={"format": "pt"})
    one_line_error(d, "model.norm.weight", "[3]")


def test_an_index_naming_an_absent_shard_is_one_error(bundled_model_dir, tmp_path):
    d = copy_model(bundled_model_dir, tmp_path / "m")
    (d / "model-00002-of-00002.safetensors").unlink()
    one_line_error(d, "model-00002-of-00002.safetensors")


def test_an_untied_model_keeps_its_own_output_layer(tmp_path):
    d = make_tiny_model(tmp_path / "m", tie_word_embeddings=False)
    assert_same_model(d, torch.float32)


def test_a_family_outside_the_table_goes_through_from_pretrained(tiny_model_dir, tmp_path):
    """A Gemma folder (no entry in the table) loads as transformers reads it."""
    from transformers import GemmaConfig, GemmaForCausalLM
    d = tmp_path / "gemma"
    cfg = GemmaConfig(vocab_size=600, hidden_size=64, intermediate_size=128, head_dim=16,
                      num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2)
    torch.manual_seed(0)
    GemmaForCausalLM(cfg).save_pretrained(d, safe_serialization=True)
    shutil.copy(tiny_model_dir / "tokenizer.json", d / "tokenizer.json")
    assert family_class("gemma") is None
    assert_same_model(d, torch.float32)


def test_an_int8_folder_is_read_by_the_same_route(tiny_model_dir, tmp_path):
    """The dequantized weights in the runtime's dtype, the int8 pairs kept, tied once."""
    from transformers import AutoModelForCausalLM
    from inkling.runtime.int8_weights import read_tensors, split_int8
    from inkling.training.int8_convert import convert
    convert(tiny_model_dir, tmp_path / "q")
    lean = read_model(tmp_path / "q", torch.float32, CPU)
    state, int8 = split_int8(read_tensors(tmp_path / "q"))
    ref = AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32).eval()
    ref.load_state_dict(state, strict=False)
    ref.tie_weights()
    assert lean.inkling_int8.keys() == int8.keys()
    for name, (q, scale) in int8.items():
        assert torch.equal(lean.inkling_int8[name][0], q)
        assert torch.equal(lean.get_parameter(name), ref.get_parameter(name)), name
    assert lean.lm_head.weight is lean.model.embed_tokens.weight
    ids = torch.arange(40)[None] % 600
    with torch.no_grad():
        assert torch.equal(lean(ids).logits, ref(ids).logits)
    half = read_model(tmp_path / "q", torch.bfloat16, CPU)
    assert half.model.layers[0].mlp.up_proj.weight.dtype == torch.bfloat16
    assert torch.equal(half.model.layers[0].mlp.up_proj.weight,
                       ref.model.layers[0].mlp.up_proj.weight.to(torch.bfloat16))


@pytest.mark.slow
def test_inkling_complete_names_a_truncated_file_in_one_line(bundled_model_dir, tmp_path):
    d = copy_model(bundled_model_dir, tmp_path / "m")
    shard = d / "model-00002-of-00002.safetensors"
    with open(shard, "r+b") as f:
        f.truncate(shard.stat().st_size - 100)
    src = tmp_path / "a.py"
    src.write_text("def f(x):\n    return ")
    run = subprocess.run([str(INKLING), "complete", str(src), "--line", "2", "--col", "12",
                          "--model", str(d)], capture_output=True, text=True, timeout=300)
    assert run.returncode != 0
    assert "Traceback" not in run.stderr
    lines = [ln for ln in run.stderr.splitlines() if "model-00002-of-00002.safetensors" in ln]
    assert len(lines) == 1, run.stderr


def test_a_llama_shape_loads_without_transformers_modelling(bundled_model_dir):
    """Loading imports neither transformers' modelling code nor torch's compiler (seconds of
    every start); calling the model builds transformers' own over the same weights."""
    code = ("import sys, torch; from inkling.runtime.model_loader import load_runtime; "
            f"rt = load_runtime({str(bundled_model_dir)!r}, device='cpu'); "
            "heavy = ('transformers.modeling_utils', 'transformers.models.llama.modeling_llama', "
            "'torch._dynamo'); print([m for m in heavy if m in sys.modules]); "
            "rt.model(torch.tensor([[1, 2, 3]])); print(type(rt.model.reference()).__name__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split("\n")
    assert out[:2] == ["[]", "LlamaForCausalLM"]
