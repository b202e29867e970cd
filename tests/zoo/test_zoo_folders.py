"""The zoo's random-weight folders (scripts/model_zoo.py): the variants' configs, loading
through inkling and transformers, a completion by ``inkling complete``, and the same bytes
from the same seed."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from zoo_models import REPO, ZOO_MODELS, zoo, zoo_model

INKLING = Path(sys.executable).parent / "inkling"
# the FIM format inkling should find in each model's vocabulary (Llama 3.2 has none)
FIM_FAMILY = {"qwen2.5-coder-0.5b": "qwen2", "qwen2.5-coder-1.5b": "qwen2",
              "deepseek-coder-1.3b-base": "deepseek-coder", "starcoder2-3b": "starcoder",
              "llama-3.2-1b": None}


@pytest.mark.parametrize("name", ZOO_MODELS)
def test_variants_keep_the_family(name):
    full = zoo.MODELS[name].config
    layers2 = zoo.variant_config(full, "layers2")
    tiny = zoo.variant_config(full, "tiny")
    assert zoo.variant_config(full, "full") == full
    assert layers2["num_hidden_layers"] == tiny["num_hidden_layers"] == 2
    assert {k: v for k, v in layers2.items() if k not in ("num_hidden_layers", "max_window_layers")} \
        == {k: v for k, v in full.items() if k not in ("num_hidden_layers", "max_window_layers")}
    ratio = full["num_attention_heads"] // full["num_key_value_heads"]
    assert tiny["num_attention_heads"] // tiny["num_key_value_heads"] == ratio
    assert tiny["hidden_size"] == tiny["num_attention_heads"] * zoo.TINY_HEAD_DIM
    assert tiny["hidden_size"] < full["hidden_size"]
    changed = {"num_hidden_layers", "max_window_layers", "num_attention_heads", "head_dim",
               "num_key_value_heads", "hidden_size", "intermediate_size"}
    assert {k: v for k, v in tiny.items() if k not in changed} == \
        {k: v for k, v in full.items() if k not in changed}


def test_a_variant_that_is_not_there_is_one_error():
    with pytest.raises(zoo.ZooError, match="no variant 'huge'"):
        zoo.variant_config(zoo.MODELS["starcoder2-3b"].config, "huge")
    with pytest.raises(zoo.ZooError, match="no model 'gpt-5'"):
        zoo.model_dir("gpt-5")


@pytest.mark.parametrize("name", ZOO_MODELS)
def test_tiny_folder_loads_through_inkling(name):
    from inkling.runtime.model_loader import load_runtime
    path = zoo_model(name)
    cfg = json.loads((path / "config.json").read_text())
    runtime = load_runtime(path, device="cpu")
    assert (runtime.fim.family if runtime.fim else None) == FIM_FAMILY[name]
    text = "def area(w, h):\n    return w * h  # 12 Äpfel\n"
    tok = zoo.tokenizer(zoo.MODELS[name].tokenizer)
    assert runtime.tokenizer.encode(text, add_special_tokens=False).ids == \
        tok.encode(text, add_special_tokens=False).ids
    assert cfg["eos_token_id"] in runtime.stop_ids
    assert runtime.model.config.vocab_size == zoo.MODELS[name].config["vocab_size"]


@pytest.mark.parametrize("name", ZOO_MODELS)
def test_tiny_folder_is_what_transformers_reads(name):
    """Every stored tensor is read (none missing, none left over); AutoTokenizer, which
    llama.cpp's converter uses, encodes as the tokenizer.json does."""
    from transformers import AutoModelForCausalLM, AutoTokenizer
    path = zoo_model(name)
    model, info = AutoModelForCausalLM.from_pretrained(path, output_loading_info=True)
    assert not any(info.values()), info
    assert next(model.parameters()).dtype.is_floating_point
    text = "class Stack:\n    def push(self, item):\n        self.items.append(item)  # 42\n"
    tok = zoo.tokenizer(zoo.MODELS[name].tokenizer)
    assert AutoTokenizer.from_pretrained(path)(text)["input_ids"] == tok.encode(text).ids


@pytest.mark.slow
@pytest.mark.parametrize("name", ZOO_MODELS)
def test_tiny_folder_completes_with_inkling_complete(name, tmp_path):
    path = zoo_model(name)
    code = tmp_path / "shapes.py"
    code.write_text("def area(width, height):\n    return \n\nprint(area(2, 3))\n")
    done = subprocess.run(
        [str(INKLING), "complete", str(code), "--line", "2", "--col", "12", "--model", str(path),
         "--json", "--drafts", "1", "--decoder", "greedy", "--max-new-tokens", "8"],
        capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    result = json.loads(done.stdout)
    assert len(result["drafts"]) == 1 and result["forwards"] >= 1
    assert result["model"]["fim"] == (FIM_FAMILY[name] or "none")


def test_same_seed_same_bytes(tmp_path):
    name = "deepseek-coder-1.3b-base"                 # the smallest tiny folder
    cached = zoo_model(name)
    root = zoo.zoo_root()
    zoo.write_model(tmp_path / "a", name, "tiny", 0, root)
    zoo.write_model(tmp_path / "b", name, "tiny", 1, root)
    files = sorted(p.name for p in cached.iterdir())
    assert files == sorted(p.name for p in (tmp_path / "a").iterdir())
    for f in files:
        assert (tmp_path / "a" / f).read_bytes() == (cached / f).read_bytes(), f
    assert (tmp_path / "b" / "model.safetensors").read_bytes() != \
        (cached / "model.safetensors").read_bytes()
    manifest = json.loads((cached / "zoo.json").read_text())
    assert manifest["seed"] == 0 and manifest["sdist"] == zoo.SDIST_PIN


def _zoo_cli(*args, env=None):
    return subprocess.run([sys.executable, str(REPO / "scripts" / "model_zoo.py"), *args],
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, **(env or {})})


def test_cli_lists_without_making(tmp_path):
    done = _zoo_cli("--list", env={"INKLING_ZOO": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    assert all(name in done.stdout for name in ZOO_MODELS)
    assert not (tmp_path / "models").exists()


def test_cli_failure_is_one_line(tmp_path):
    bad = _zoo_cli("--models", "nope", env={"INKLING_ZOO": str(tmp_path)})
    assert bad.returncode == 1 and bad.stderr.strip().count("\n") == 0
    assert "no model nope" in bad.stderr
    offline = _zoo_cli("--models", "starcoder2-3b", "--variants", "tiny",
                       env={"INKLING_ZOO": str(tmp_path), "PIP_CONFIG_FILE": os.devnull,
                            "PIP_NO_INDEX": "1"})
    assert offline.returncode == 1
    last = offline.stderr.strip().splitlines()[-1]
    assert last.startswith("model_zoo: could not download") and "Traceback" not in offline.stderr
