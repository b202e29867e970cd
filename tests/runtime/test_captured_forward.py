"""The captured forward (runtime/captured_llama.py) on the CPU, where its static steps run
eagerly: the same code a GPU captures and replays.

Over the real PromptCache paths (prefill in chunks past 64 rows, one-row steps, n-row
chains and draft trees padded to their bucket, accepted paths kept, PIE splices with
re-rotated keys, a branch's gathered cache, superposed embeddings, buffers that grow) on
random-weight Llama (grouped and not) and Qwen2 models in float32: logits within 1e-4 of
transformers' forward and of the compact forward, greedy tokens identical. And the choice
at load: auto runs it on a GPU only, and says why.
"""
import random

import pytest
import torch

from conftest import make_tiny_model
from inkling.runtime.captured_llama import BUCKETS, CapturedBuffers, CapturedLlama, bucket_for
from inkling.runtime.model_loader import load_runtime
from inkling.cache.prompt_cache import PromptCache

FORWARDS = ("reference", "compact", "captured")


def _qwen2(path):
    """The tiny Llama folder with a Qwen2 model of its shape (q/k/v biases that matter)."""
    from transformers import AutoConfig, AutoModelForCausalLM
    llama = AutoConfig.from_pretrained(path)
    cfg = AutoConfig.for_model("qwen2", **{k: getattr(llama, k) for k in (
        "vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers",
        "num_attention_heads", "num_key_value_heads", "max_position_embeddings",
        "tie_word_embeddings", "eos_token_id", "pad_token_id")}, sliding_window=None)
    torch.manual_seed(1)
    model = AutoModelForCausalLM.from_config(cfg)
    for layer in model.model.layers:
        for proj in (layer.self_attn.q_proj, layer.self_attn.k_proj, layer.self_attn.v_proj):
            torch.nn.init.normal_(proj.bias, std=0.5)
    for f in path.glob("*.safetensors"):
        f.unlink()
    model.save_pretrained(path, safe_serialization=True)
    return path


@pytest.fixture(scope="module", params=["llama-gqa", "llama-mha", "qwen2"])
def runtime(request, tmp_path_factory):
    kind = request.param
    path = make_tiny_model(tmp_path_factory.mktemp(kind),
                           **({"num_key_value_heads": 4} if kind == "llama-mha" else {}))
    if kind == "qwen2":
        _qwen2(path)
    return load_runtime(path, device="cpu", dtype="float32")


def _all(rt, mode="full", **kw):
    return {f: PromptCache(rt, mode, forward=f, **kw) for f in FORWARDS}


def _same(outs: dict) -> None:
    """Each forward's outputs against the reference's: within 1e-4, the same argmax."""
    for name in ("compact", "captured"):
        for a, b in zip(outs["reference"], outs[name]):
            assert a.shape == b.shape, name
            assert torch.isfinite(b).all(), name
            assert torch.allclose(a, b, atol=1e-4, rtol=0), (name, (a - b).abs().max())
            assert torch.equal(a.argmax(-1), b.argmax(-1)), name


def _ids(rt, n, seed=0):
    g = random.Random(seed)
    return [g.randrange(3, rt.vocab_size) for _ in range(n)]


def test_buckets_hold_the_rows():
    assert [bucket_for(n) for n in (1, 2, 4, 5, 16, 17, 64, 65)] == [1, 4, 4, 16, 16, 64, 64,
                                                                       None]
    assert BUCKETS == tuple(sorted(BUCKETS))


def test_one_row_steps_chains_trees_and_accepted_paths(runtime):
    caches = _all(runtime, prefill_chunk=100)
    prompt = _ids(runtime, 130)
    outs = {}
    for name, c in caches.items():
        o = [c.extend(prompt, last_only=True),                 # 100 rows (compact), then 30
             c.extend([7]), c.extend([8, 9, 10])]
        o.append(c.extend_tree([11, 12, 13, 14, 15], [-1, 0, 0, 2, 1]))
        c.keep_new(len(c.ids) - 5, [0, 2, 3])                  # not a prefix: moved down
        o += [c.extend([16]), c.rerun(3), c.extend([17])]
        o.append(c.extend_tree(list(range(20, 37)), [-1] + list(range(16))))   # 17: bucket 64
        c.keep_new(len(c.ids) - 17, [0, 1])                    # a prefix: cut
        o += [c.extend([19]), c.extend([20])]
        outs[name] = o
    _same(outs)
    kv = caches["captured"].past
    assert isinstance(kv, CapturedBuffers)
    assert set(kv.steps) == {1, 4, 16, 64}                     # every bucket ran its step
    assert all(s.graph is None and s.runs >= 1 for s in kv.steps.values())   # the CPU: eager
    ref = caches["reference"].past
    assert kv.get_seq_length() == ref.get_seq_length() == len(caches["captured"].ids)
    for x, y in zip(ref.layers, kv.layers):
        assert torch.allclose(x.keys, y.keys, atol=1e-5) and torch.allclose(x.values, y.values,
                                                                             atol=1e-5)


def test_pie_edits_near_the_top_and_large_splices(runtime):
    caches = _all(runtime, "pie", stale_threshold=1.0, prefill_chunk=40)
    base = _ids(runtime, 150, seed=1)
    edits = [base[:20] + [5, 6] + base[20:],                   # insertion: the tail shifts
             base[:3] + base[7:] + [9],                        # deletion near the top
             base[:60] + _ids(runtime, 50, seed=2) + base[60:],  # > prefill_chunk: in order
             base[5:] + [4]]                                   # the window slid
    outs = {name: [] for name in caches}
    for ids in edits:
        got = {name: c.sync(ids) for name, c in caches.items()}
        assert got["captured"].mode == got["reference"].mode
        assert got["captured"].reused == got["reference"].reused
        for name, c in caches.items():
            outs[name] += [got[name].logits, c.extend([11])]   # a step after the edit
    _same(outs)


def test_branches_gathered_and_superposed_embeddings(runtime):
    caches = _all(runtime)
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
    assert isinstance(caches["captured"].past, CapturedBuffers)
    _same(outs)


def test_steps_across_buffer_growth_and_greedy_tokens(runtime):
    tokens, outs = {}, {}
    for name, c in _all(runtime).items():
        logits, out, o = c.extend(_ids(runtime, 240, seed=4), last_only=True)[-1], [], []
        for _ in range(40):                                    # 240 + 40: past 256 entries
            out.append(int(logits.argmax()))
            logits = c.extend([out[-1]])[-1]
            o.append(logits)
        tokens[name], outs[name] = out, o
        if name == "captured":
            assert c.past.capacity > 256                       # grew; its steps made again
            assert c.past.steps[1].keys is c.past.keys
    assert tokens["reference"] == tokens["compact"] == tokens["captured"]
    _same(outs)


def test_padding_rows_leave_no_trace(runtime):
    """A 2-row step pads to 4 rows: the padding writes past the cache's length, and what
    comes after sees none of it (a stale, even huge entry there is masked out)."""
    caches = {f: PromptCache(runtime, "full", forward=f) for f in ("compact", "captured")}
    outs = {}
    for name, c in caches.items():
        c.extend(_ids(runtime, 30, seed=5), last_only=True)
        if name == "captured":
            c.past.keys[..., 30:40, :] = 1e4                   # stale entries past the end
        outs[name] = [c.extend([5, 6]), c.extend([7]), c.extend([8, 9, 10, 11, 12])]
    for a, b in zip(outs["compact"], outs["captured"]):
        assert torch.allclose(a, b, atol=1e-4, rtol=0), (a - b).abs().max()


def test_auto_runs_the_captured_forward_on_a_gpu_only(runtime):
    assert runtime.forward_kind("auto") != "captured"          # the CPU keeps its forward
    assert runtime.forward_kind("captured") == "captured"
    assert isinstance(runtime.forwards.captured_forward(), CapturedLlama)
    cpu = runtime.device
    try:
        runtime.device = torch.device("cuda")                  # what the choice reads
        assert runtime.forward_kind("auto") == "captured"
        assert "CUDA graphs" in runtime.auto_note()
    finally:
        runtime.device = cpu
    assert runtime.forward_kind("auto") != "captured"


def test_rotary_scaling_by_length_stays_on_the_compact_forward(runtime):
    rope = getattr(runtime.model.config, "rope_parameters", None)
    cpu = runtime.device
    try:
        runtime.model.config.rope_parameters = {**(rope or {}), "rope_type": "dynamic"}
        runtime.device = torch.device("cuda")
        assert runtime.forward_kind("auto") != "captured"
        assert "no captured forward: rotary scaling 'dynamic'" in runtime.auto_note()
        with pytest.raises(ValueError, match="no captured forward: rotary scaling 'dynamic'"):
            CapturedLlama(runtime.model)
    finally:
        runtime.model.config.rope_parameters, runtime.device = rope, cpu
