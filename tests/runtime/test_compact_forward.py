"""The compact forward (runtime/compact_llama.py) against transformers' forward.

Both run over the real PromptCache paths (prefill in chunks, appends, an n-row chain,
draft trees and keeping the accepted path, pie splices with re-rotated keys, a splice
too large for one forward, a branch's gathered cache, superposed embeddings) on
random-weight Llama, Qwen2 (q/k/v biases) and Mistral models, grouped and not: logits
within 1e-4 (they are equal to the bit on this CPU, which is asserted too where it
holds by construction), greedy tokens identical. Models outside the family stay on the
reference forward.
"""
import random

import pytest
import torch

from conftest import make_tiny_model
from inkling.runtime.errors import ModelError
from inkling.runtime.kv_buffers import KVBuffers
from inkling.runtime.model_loader import load_runtime
from inkling.cache.prompt_cache import PromptCache
from inkling.cache.tree_mask import tree_mask

FAMILIES = {
    "llama-gqa": {},
    "llama-mha": {"num_key_value_heads": 4},
    "qwen2": {"model_type": "qwen2"},
    "mistral": {"model_type": "mistral"},
}


def _model(tmp_path, kind: str):
    overrides = dict(FAMILIES[kind])
    model_type = overrides.pop("model_type", "llama")
    if model_type == "llama":
        return make_tiny_model(tmp_path / kind, **overrides)
    from transformers import AutoConfig, AutoModelForCausalLM
    path = make_tiny_model(tmp_path / kind, **overrides)            # tokenizer, inkling.json
    llama = AutoConfig.from_pretrained(path)
    cfg = AutoConfig.for_model(model_type, **{k: getattr(llama, k) for k in (
        "vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers",
        "num_attention_heads", "num_key_value_heads", "max_position_embeddings",
        "tie_word_embeddings", "eos_token_id", "pad_token_id")}, sliding_window=None)
    torch.manual_seed(1)
    model = AutoModelForCausalLM.from_config(cfg)
    if model_type == "qwen2":                                  # biases that matter
        for layer in model.model.layers:
            for proj in (layer.self_attn.q_proj, layer.self_attn.k_proj, layer.self_attn.v_proj):
                torch.nn.init.normal_(proj.bias, std=0.5)
    for f in path.glob("*.safetensors"):
        f.unlink()
    model.save_pretrained(path, safe_serialization=True)
    return path


@pytest.fixture(scope="module", params=sorted(FAMILIES))
def runtime(request, tmp_path_factory):
    rt = load_runtime(_model(tmp_path_factory.mktemp("m"), request.param), device="cpu",
                      dtype="float32")
    assert rt.compact is not None, rt.compact_refusal
    return rt


def _both(rt, mode="full", **kw):
    return {f: PromptCache(rt, mode, forward=f, **kw) for f in ("reference", "compact")}


def _same(a: torch.Tensor, b: torch.Tensor) -> None:
    assert a.shape == b.shape
    assert torch.allclose(a, b, atol=1e-4, rtol=0), (a - b).abs().max()
    assert torch.equal(a.argmax(-1), b.argmax(-1))


def _ids(rt, n, seed=0):
    g = random.Random(seed)
    return [g.randrange(3, rt.vocab_size) for _ in range(n)]


def test_appends_chains_trees_and_accepted_paths(runtime):
    caches = _both(runtime, prefill_chunk=48)
    assert isinstance(caches["compact"].past, type(None))
    prompt = _ids(runtime, 130)
    outs = {}
    for name, c in caches.items():
        o = [c.extend(prompt, last_only=True),                 # three chunks
             c.extend([7]), c.extend([8, 9, 10])]
        o.append(c.extend_tree([11, 12, 13, 14, 15], [-1, 0, 0, 2, 1]))
        c.keep_new(len(c.ids) - 5, [0, 2, 3])                  # not a prefix: moved down
        o += [c.extend([16]), c.rerun(3)]
        o.append(c.extend_tree([17, 18], [-1, 0]))
        c.keep_new(len(c.ids) - 2, [0])                        # a prefix: cut
        o.append(c.extend([19]))
        outs[name] = o
    assert isinstance(caches["compact"].past, KVBuffers)
    for a, b in zip(outs["reference"], outs["compact"]):
        _same(a, b)
        assert torch.equal(a, b)                               # the same ops, the same bits
    ref, comp = caches["reference"].past, caches["compact"].past
    assert comp.get_seq_length() == ref.get_seq_length() == len(caches["compact"].ids)
    for x, y in zip(ref.layers, comp.layers):
        assert torch.equal(x.keys, y.keys) and torch.equal(x.values, y.values)


def test_pie_edits_and_large_splices(runtime):
    caches = _both(runtime, "pie", stale_threshold=1.0, prefill_chunk=40)
    base = _ids(runtime, 150, seed=1)
    edits = [base[:20] + [5, 6] + base[20:],                   # insertion: the tail shifts
             base[:10] + base[14:] + [9],                      # deletion near the top
             base[:60] + _ids(runtime, 50, seed=2) + base[60:],  # > prefill_chunk: in order
             base[5:] + [4]]                                   # the window slid
    for ids in edits:
        got = {name: c.sync(ids) for name, c in caches.items()}
        assert got["reference"].mode == got["compact"].mode
        assert got["reference"].reused == got["compact"].reused
        _same(got["reference"].logits, got["compact"].logits)
        assert torch.equal(got["reference"].logits, got["compact"].logits)


def test_branches_gathered_and_superposed_embeddings(runtime):
    caches = _both(runtime)
    prompt = _ids(runtime, 70, seed=3)
    emb = runtime.input_embeddings().weight[[5, 6, 7]].detach() * 0.5     # [3, hidden]
    outs = {}
    for name, c in caches.items():
        c.extend(prompt, last_only=True)
        tree = c.extend_masked([20, 21, 22, 23], [70, 71, 70, 71],
                               [[70], [70, 71], [72], [72, 73]], shared=70)
        alone = c.gathered(list(range(70)) + [72, 73])
        outs[name] = [tree, alone.rerun(2, last_only=False), alone.extend([24])]
        c.truncate(70)
        outs[name].append(c.extend_embeds(emb))
    for a, b in zip(outs["reference"], outs["compact"]):
        _same(a, b)


def test_greedy_tokens_identical(runtime):
    tokens = {}
    for name, c in _both(runtime).items():
        logits, out = c.extend(_ids(runtime, 90, seed=4), last_only=True)[-1], []
        for _ in range(40):
            out.append(int(logits.argmax()))
            logits = c.extend([out[-1]])[-1]
        tokens[name] = out
    assert tokens["reference"] == tokens["compact"]


def test_buffers_grow_and_report_their_capacity(runtime):
    cache = PromptCache(runtime, "full", forward="compact", prefill_chunk=200)
    cache.extend(_ids(runtime, 300), last_only=True)
    kv = cache.past
    assert kv.capacity >= 300 and kv.capacity % 256 == 0
    assert cache.nbytes() == 2 * kv.keys.numel() * 4
    cache.truncate(10)
    assert kv.length == 10 and kv.capacity >= 300        # truncating keeps the buffers


def test_tree_mask_matches_the_ancestor_lists():
    g = random.Random(5)
    for n in (1, 2, 7, 33):
        parents = [-1] + [g.randrange(-1, i) for i in range(1, n)]
        positions, mask = tree_mask(parents, 4, torch.float32)
        depth, seen = [], []
        for i, p in enumerate(parents):
            depth.append(0 if p < 0 else depth[p] + 1)
            seen.append(([] if p < 0 else seen[p]) + [4 + i])
        want = torch.full((n, 4 + n), torch.finfo(torch.float32).min)
        want[:, :4] = 0
        for i, cols in enumerate(seen):
            want[i, cols] = 0
        assert positions.tolist() == [4 + d for d in depth]
        assert torch.equal(mask, want)
    with pytest.raises(ValueError, match="parents"):
        tree_mask([0], 0, torch.float32)


def test_other_families_stay_on_the_reference_forward(tmp_path):
    from transformers import AutoConfig, AutoModelForCausalLM
    path = make_tiny_model(tmp_path / "sc2")
    cfg = AutoConfig.for_model("starcoder2", vocab_size=AutoConfig.from_pretrained(path).vocab_size,
                               hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                               num_attention_heads=4, num_key_value_heads=2,
                               max_position_embeddings=2048, eos_token_id=0)
    for f in path.glob("*.safetensors"):
        f.unlink()
    AutoModelForCausalLM.from_config(cfg).save_pretrained(path, safe_serialization=True)
    rt = load_runtime(path, device="cpu", dtype="float32")
    assert rt.compact is None and "starcoder2" in rt.compact_refusal
    assert PromptCache(rt, "full").forward.name == "reference"             # auto
    with pytest.raises(ModelError, match="no compact forward.*starcoder2"):
        PromptCache(rt, "full", forward="compact")


def test_a_model_swapped_in_after_loading_runs_the_reference(tiny_model_dir):
    from transformers import AutoModelForCausalLM
    rt = load_runtime(tiny_model_dir, device="cpu", dtype="float32")
    rt.model = AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32).eval()
    assert PromptCache(rt, "full").forward.name == "reference"
