"""The native forward on the zoo's real shapes (tests/zoo_models.py: random weights, bfloat16
shards read as float32) against transformers' own forward of a freshly read model.

Qwen2.5-Coder (q / k / v biases, 14 heads over 2 KV heads, tied embeddings) and DeepSeek-Coder
(a Llama, linear RoPE scaling, untied): a prefill, one-row steps, and a 16-row draft tree under
its mask (the native layers' many-row attention), each within 1e-4 of transformers' logits of
the same tokens at the same positions, uncached. A bfloat16 checkpoint's weights are not all
float16 values, so the panels are bfloat16, and their sums equal the float32 panels' to the bit.
"""
from __future__ import annotations

import random

import pytest
import torch

from zoo_models import zoo_model
from inkling.runtime import native_llama
from inkling.runtime.model_loader import load_runtime
from inkling.runtime.native_llama import ATTEND_MANY_ROWS, load_extension

ZOO_FAMILIES = ("qwen2.5-coder-0.5b", "deepseek-coder-1.3b-base")
TREE_PARENTS = [-1, 0, 0, 1, 1, 2, 3, 3, 4, 5, 6, 6, 7, 8, 9, 10]     # 16 rows, depth 6


@pytest.fixture(scope="module", params=ZOO_FAMILIES)
def loaded(request):
    """(the runtime on its native forward, transformers' own model of the same folder)."""
    from transformers import AutoModelForCausalLM
    path = zoo_model(request.param)
    rt = load_runtime(path, device="cpu", dtype="float32", forward="native")
    reference = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()
    return rt, reference


def _ids(rt, n: int, seed: int) -> list[int]:
    g = random.Random(seed)
    return [g.randrange(3, rt.vocab_size) for _ in range(n)]


@torch.inference_mode()
def _reference(model, ids: list[int]) -> torch.Tensor:
    """transformers' logits [len(ids), vocab] of ``ids`` from position 0, no cache."""
    return model(torch.tensor([ids]), use_cache=False).logits[0]


def _embeds(rt, ids: list[int]) -> torch.Tensor:
    return rt.model.get_input_embeddings()(torch.tensor([ids])).detach()    # [1, n, hidden]


def _tree_mask(past: int, parents: list[int]) -> tuple[torch.Tensor, list[int]]:
    """The bool mask [1, 1, n, past + n] of a draft tree after ``past`` entries, and depths."""
    n = len(parents)
    mask = torch.zeros(1, 1, n, past + n, dtype=torch.bool)
    mask[..., :past] = True
    depth = []
    for i, p in enumerate(parents):
        depth.append(0 if p < 0 else depth[p] + 1)
        j = i
        while j >= 0:
            mask[0, 0, i, past + j] = True
            j = parents[j]
    return mask, depth


def _path(parents: list[int], i: int) -> list[int]:
    """The rows from the tree's root to row ``i``."""
    rows = []
    while i >= 0:
        rows.append(i)
        i = parents[i]
    return rows[::-1]


def _close(got: torch.Tensor, want: torch.Tensor) -> None:
    assert got.shape == want.shape
    gap = (got - want).abs().max().item()
    assert gap <= 1e-4, gap
    assert torch.equal(got.argmax(-1), want.argmax(-1))


def test_prefill_steps_and_a_masked_tree_match_transformers(loaded):
    rt, reference = loaded
    native = rt.native_forward()
    kv = native.new_store()
    prompt = _ids(rt, 40, seed=1)
    got = native.forward(kv, _embeds(rt, prompt), torch.arange(40)[None])[0]   # [40, vocab]
    _close(got, _reference(reference, prompt))
    ids = list(prompt)
    for token in _ids(rt, 3, seed=2):                                # one-row steps
        ids.append(token)
        at = len(ids) - 1
        step = native.forward(kv, _embeds(rt, [token]), torch.tensor([[at]]))[0]
        _close(step, _reference(reference, ids)[-1:])
    tree = _ids(rt, len(TREE_PARENTS), seed=3)
    assert len(tree) >= ATTEND_MANY_ROWS                              # attention as GEMMs
    mask, depth = _tree_mask(len(ids), TREE_PARENTS)
    positions = torch.tensor([[len(ids) + d for d in depth]])
    rows = native.forward(kv, _embeds(rt, tree), positions, mask)[0]   # [16, vocab]
    for i in range(len(tree)):
        path = ids + [tree[j] for j in _path(TREE_PARENTS, i)]
        _close(rows[i:i + 1], _reference(reference, path)[-1:])


def test_bfloat16_checkpoints_run_bfloat16_panels_with_float32_sums(loaded, monkeypatch):
    rt, _ = loaded
    ext = load_extension()
    if not ext.fast_bfloat16():
        pytest.skip("this CPU has no AVX2: bfloat16 panels are not chosen")
    native = rt.native_forward()
    panels = [w for w in native.weights if w.dim() == 3] + [native.head_panels]
    weights = [p.weight_t for p in rt.model.modules() if hasattr(p, "weight_t")]
    assert any(not torch.equal(w.half().float(), w) for w in weights)   # float16 cannot hold them
    assert native.storage == "bfloat16"
    assert all(p.dtype == torch.bfloat16 for p in panels)
    monkeypatch.setattr(native_llama, "panel_storage", lambda *a: "float32")
    wide = native_llama.NativeLlama(rt.model)
    assert wide.head_panels.dtype == torch.float32
    ids = _ids(rt, 20, seed=4)
    mask, depth = _tree_mask(20, TREE_PARENTS)
    steps = ((ids, torch.arange(20)[None], None),                    # prefill
             (ids[:1], torch.tensor([[20]]), None),                  # one row
             (ids[:3], torch.tensor([[21, 22, 23]]), None),
             (ids[:16], torch.tensor([[24 + d for d in depth]]), _tree_mask(24, TREE_PARENTS)[0]))
    outs = []
    for forward in (native, wide):
        kv = forward.new_store()
        outs.append([forward.forward(kv, _embeds(rt, x), pos, m) for x, pos, m in steps])
    for a, b in zip(*outs):
        assert torch.equal(a, b)


@pytest.mark.parametrize("n", [1, 2, 3, 5, 7, 8, 9, 16, 17, 64])
def test_bfloat16_panels_make_the_float32_panels_sums(n):
    ext = load_extension()
    g = torch.Generator().manual_seed(n)
    x = torch.randn(n, 224, generator=g)
    w = (torch.randn(224, 200, generator=g) * 0.02).bfloat16().float()
    w[0, 0] = 2.0 ** -30                         # a bfloat16 value float16 cannot hold
    assert not torch.equal(w.half().float(), w)
    y = ext.project_rows(x, w, "bfloat16")
    assert torch.equal(y, ext.project_rows(x, w))
    assert torch.allclose(y, x @ w, atol=1e-5, rtol=1e-5)
    packed = ext.pack_panels(w, "bfloat16")
    wide = ext.pack_panels(w)                                # half the bytes of float32's
    assert packed.dtype == torch.bfloat16 and packed.shape == wide.shape
    assert packed.untyped_storage().nbytes() * 2 == wide.untyped_storage().nbytes()
    assert torch.equal(ext.project_packed(x, packed, 200), y)


def test_panels_are_refused_a_storage_that_does_not_hold_the_weights():
    ext = load_extension()
    with pytest.raises(RuntimeError, match="not every weight is a bfloat16 value"):
        ext.pack_panels(torch.full((4, 3), 0.1), "bfloat16")
    with pytest.raises(RuntimeError, match="storage: float32, float16 or bfloat16"):
        ext.pack_panels(torch.ones(4, 3), "int4")


def test_panel_storage_prefers_float16_then_bfloat16():
    ext = load_extension()
    if not (ext.fast_half() and ext.fast_bfloat16()):
        pytest.skip("this CPU lacks F16C or AVX2")
    both = torch.linspace(-2, 2, 64).view(8, 8).bfloat16().float()   # float16 values too
    halves = torch.full((8, 8), 1 + 2.0 ** -10)            # float16, not bfloat16
    tiny = torch.full((8, 8), 2.0 ** -30)                  # bfloat16, not float16
    def read(*tensors):
        return [lambda t=t: t for t in tensors]
    assert native_llama.panel_storage(ext, read(both, None, torch.full((8,), 0.1))) == "float16"
    assert native_llama.panel_storage(ext, read(halves, both)) == "float16"
    assert native_llama.panel_storage(ext, read(both, tiny)) == "bfloat16"
    assert native_llama.panel_storage(ext, read(halves, tiny)) == "float32"
    assert native_llama.panel_storage(ext, read(both, torch.full((8, 8), 0.1))) == "float32"


def test_panels_are_made_one_weight_copy_at_a_time(loaded, monkeypatch):
    """Each weight the panels read as a copy (a packed layer's) is dropped before the next is
    made: the load's peak holds one copy, not the whole model's."""
    import weakref
    rt, _ = loaded
    alive, most = set(), [0]

    def copied(linear):
        w = linear.weight_t.clone() if hasattr(linear, "weight_t") else linear.weight.t().clone()
        alive.add(id(w))
        weakref.finalize(w, alive.discard, id(w))
        most[0] = max(most[0], len(alive))
        return w

    monkeypatch.setattr(native_llama, "_weight_t", copied)
    native = rt.native_forward()
    native.repack()
    assert 0 < most[0] <= 2
