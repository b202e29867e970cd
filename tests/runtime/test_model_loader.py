import json
import shutil

import pytest

from inkling.runtime.errors import ModelError
from inkling.runtime.model_loader import check_model_dir, load_runtime
from inkling.training.tokenizer_recipe import train_tokenizer
from inkling.runtime.model_runtime import cache_keyword
from conftest import make_tiny_model


def test_loads_offline_from_a_path(tiny_model_dir, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    rt = load_runtime(tiny_model_dir, device="cpu", dtype="auto")
    assert rt.fim is not None and rt.fim.family == "inkling" and rt.fim_order == "spm"
    assert rt.context_limit == 1024
    assert rt.token_id("<|endoftext|>") in rt.stop_ids
    assert str(rt.dtype) == "torch.float32" and rt.device.type == "cpu"


def test_missing_path_is_named(tmp_path):
    with pytest.raises(ModelError, match="does not exist"):
        check_model_dir(tmp_path / "nope")


def test_config_without_rope_is_refused(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "gpt2", "n_positions": 1024}))
    with pytest.raises(ModelError, match="no rotary position embeddings"):
        load_runtime(tmp_path)


def test_unknown_family_without_rope_fields_is_refused(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "mystery"}))
    with pytest.raises(ModelError, match="'mystery'.*no rotary"):
        check_model_dir(tmp_path)


def test_remote_code_and_pickles_are_refused(tiny_model_dir, tmp_path):
    d = tmp_path / "m"
    shutil.copytree(tiny_model_dir, d)
    cfg = json.loads((d / "config.json").read_text())
    (d / "config.json").write_text(json.dumps({**cfg, "auto_map": {"AutoModel": "x.Y"}}))
    with pytest.raises(ModelError, match="remote code"):
        check_model_dir(d)
    (d / "config.json").write_text(json.dumps(cfg))
    for f in d.glob("*.safetensors"):
        f.unlink()
    (d / "pytorch_model.bin").write_bytes(b"\0")
    with pytest.raises(ModelError, match="no .safetensors"):
        check_model_dir(d)


def test_cuda_asked_without_cuda(tiny_model_dir):
    import torch
    if torch.cuda.is_available():
        pytest.skip("CUDA is present")
    with pytest.raises(ModelError, match="CUDA is not available"):
        load_runtime(tiny_model_dir, device="cuda")


def test_tokenizer_round_trip_and_specials():
    texts = ["def f(x):\n    return x + 1\n", "s = 'héllo 😀'\r\n\tcafé = {}\n"]
    tok = train_tokenizer(texts * 20, 400)
    for t in texts + ["unseen ünïcödé ✓ text\n", "    \n\n  "]:
        assert tok.decode(tok.encode(t).ids) == t
    for special in ("<|endoftext|>", "<|file_sep|>", "<|fim_prefix|>", "<|fim_suffix|>",
                    "<|fim_middle|>"):
        ids = tok.encode(special).ids
        assert ids == [tok.token_to_id(special)]
    with pytest.raises(ValueError, match="16,384"):
        train_tokenizer(texts, 20000)


def test_bundled_tokenizer_round_trip(bundled_model_dir, shared_dir):
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(str(bundled_model_dir / "tokenizer.json"))
    assert tok.get_vocab_size() <= 16384
    for path in sorted((shared_dir / "samples").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        assert tok.decode(tok.encode(text).ids) == text


@pytest.mark.parametrize("tied", [True, False])
def test_cpu_layout_gives_the_same_logits_and_holds_no_weight_twice(tmp_path, tied):
    """The CPU runtime's linear layers hold [in, out] weights; a forward gives the logits
    of the model as transformers loads it, and a tied output layer still shares its
    storage with the input embedding."""
    import torch
    from transformers import AutoModelForCausalLM

    from inkling.runtime.cpu_layout import InputMajorLinear
    from inkling.runtime.model_loader import load_runtime
    path = make_tiny_model(tmp_path / "m", tie_word_embeddings=tied, attention_bias=True)
    rt = load_runtime(path, device="cpu", dtype="float32")
    ref = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()
    linears = [m for m in rt.model.modules() if isinstance(m, torch.nn.Linear)]
    assert not linears and isinstance(rt.model.lm_head, InputMajorLinear)
    assert rt.model.model.layers[0].self_attn.q_proj.bias is not None
    shared = rt.model.get_input_embeddings().weight.data_ptr() == \
        rt.model.lm_head.weight_t.data_ptr()
    assert shared == tied
    x = torch.randint(0, rt.vocab_size, (1, 40))
    with torch.inference_mode():
        for n in (40, 1):                           # a prefill, and one decoding row
            got, want = rt.model(input_ids=x[:, :n]).logits, ref(input_ids=x[:, :n]).logits
            assert torch.allclose(got, want, atol=1e-5), (got - want).abs().max()


@pytest.mark.parametrize("tied", [True, False])
def test_large_layers_are_packed_for_onednn_and_give_the_same_logits(tied):
    """An output layer of 2^20 weights is held in oneDNN's packed layout; the logits for
    1 to 16 rows after a cached prefix match transformers' layer within float32 noise,
    and a tied embedding keeps its own rows."""
    import copy

    import torch
    from transformers import DynamicCache, LlamaConfig, LlamaForCausalLM

    from inkling.runtime.cpu_layout import PACK_MIN_WEIGHTS, InputMajorLinear, PackedLinear, \
        lay_out_for_cpu
    if not torch.backends.mkldnn.is_available():
        pytest.skip("this torch build has no oneDNN")
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=PACK_MIN_WEIGHTS // 64, hidden_size=64, intermediate_size=128,
                      num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                      tie_word_embeddings=tied)
    ref = LlamaForCausalLM(cfg).eval()
    model = copy.deepcopy(ref)
    assert lay_out_for_cpu(model) == 2 * 7 + 1
    assert isinstance(model.lm_head, PackedLinear)
    assert isinstance(model.model.layers[0].mlp.up_proj, InputMajorLinear)   # small: x @ Wt
    assert torch.equal(model.get_input_embeddings().weight, ref.get_input_embeddings().weight)
    assert torch.equal(model.lm_head.weight, ref.lm_head.weight)
    x = torch.randint(0, cfg.vocab_size, (1, 60))
    with torch.inference_mode():
        for rows in (1, 2, 3, 8, 16):
            got, want = [], []
            for m, out in ((model, got), (ref, want)):
                past = DynamicCache(config=cfg)
                m(input_ids=x[:, :40], **{cache_keyword(m): past}, use_cache=True)
                out.append(m(input_ids=x[:, 40:40 + rows], **{cache_keyword(m): past},
                             use_cache=True).logits)
            assert torch.allclose(got[0], want[0], atol=1e-4, rtol=1e-4), \
                (rows, (got[0] - want[0]).abs().max())


def test_a_large_tied_output_layer_is_not_copied_past_the_budget(monkeypatch):
    import torch

    from inkling.runtime import cpu_layout
    weight = torch.zeros(cpu_layout.PACK_MIN_WEIGHTS)
    assert cpu_layout.PackedLinear.suits(weight, tied=False) == \
        torch.backends.mkldnn.is_available()
    monkeypatch.setattr(cpu_layout, "TIED_PACK_MAX_BYTES", weight.numel() * 4 - 1)
    assert not cpu_layout.PackedLinear.suits(weight, tied=True)
    assert not cpu_layout.PackedLinear.suits(weight.half(), tied=False)
    assert not cpu_layout.PackedLinear.suits(weight[:1000], tied=False)


def test_threads_follow_the_rule_unless_given():
    import torch

    from inkling.runtime.model_loader import pick_threads
    from inkling.runtime.model_size import SMALL_MODEL_PARAMS
    cpu = torch.device("cpu")
    assert pick_threads(0, cpu, 6_000_000) == 1
    assert pick_threads(0, cpu, SMALL_MODEL_PARAMS) >= 1
    assert pick_threads(3, cpu, 6_000_000) == 3
    assert pick_threads(0, torch.device("cuda"), 6_000_000) is None
