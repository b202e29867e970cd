"""int8 weights (runtime/int8_weights.py, training/int8_convert.py): the native forward on
int8 panels against transformers' forward over the dequantized weights.

A random-weight Llama folder and the bundled model, each converted to int8 (projections
int8; embeddings float16 or int8 too): the loader gives transformers' model the
dequantized weights and the native forward int8 panels (a quarter of the bytes, the
column scales applied to the finished sums); logits within 1e-4 of the reference over
the PromptCache's paths (prefill in chunks, appends, a draft tree, its accepted path),
the same greedy tokens. These are the float products of the int8 panels (``use_vnni(False)``);
the int8 products of VNNI, where the CPU has it, are bounded against them below.
"""
import pytest
import torch

from conftest import make_tiny_model
from inkling.runtime.int8_weights import dequantize, is_int8_folder, quantize_rows
from inkling.runtime.model_loader import load_runtime
from inkling.runtime.native_llama import MAX_ROWS, load_extension
from inkling.cache.prompt_cache import PromptCache
from inkling.models import BUNDLED_MODEL_DIR
from inkling.training.int8_convert import convert
from test_compact_forward import _ids
from test_compact_forward import _same as _close     # within 1e-4, the same argmax


# VNNI's int8 rows (blocks of 32 inputs over their largest magnitude) against the float
# product of the same int8 weights: relative L2 error of a projection
VNNI_RELATIVE_ERROR = 0.01


@pytest.fixture(autouse=True)
def float_products():
    """The int8 panels times float rows, as the reference computes; VNNI back on after."""
    ext = load_extension()
    ext.use_vnni(False)
    yield
    ext.use_vnni(True)


def test_quantize_rows_keeps_each_row_within_half_a_step():
    w = torch.randn(37, 64) * torch.linspace(0.01, 3, 37)[:, None]
    q, scale = quantize_rows(w)
    assert q.dtype == torch.int8 and scale.shape == (37,)
    assert q.abs().max() == 127
    assert ((dequantize(q, scale) - w).abs() <= scale[:, None] / 2 + 1e-7).all()


@pytest.mark.parametrize("n, inn, out", [(1, 256, 688), (3, 688, 256), (6, 64, 37),
                                         (9, 64, 8192), (MAX_ROWS, 128, 40)])
def test_int8_panels_give_the_dequantized_product(n, inn, out):
    ext = load_extension()
    g = torch.Generator().manual_seed(n)
    q, scale = quantize_rows(torch.randn(out, inn, generator=g))
    x = torch.randn(n, inn, generator=g)
    panels = ext.pack_int8_panels(q.t().contiguous(), scale)
    assert panels.dtype == torch.int8 and panels.shape == ((out + 15) // 16, inn + 4, 16)
    y = ext.project_packed(x, panels, out)
    ref = x @ dequantize(q, scale).t()
    assert torch.allclose(y, ref, atol=1e-4 * ref.abs().max().item(), rtol=0)


def _runtime(src, dest, embeddings):
    convert(src, dest, embeddings)
    assert is_int8_folder(dest)
    rt = load_runtime(dest, device="cpu", dtype="float32")
    assert rt.forward_kind("native") == "native"
    return rt


def _paths(rt, n_prompt):
    """Logits of both forwards over a prompt in chunks, appends, a tree and its path."""
    outs = {}
    for f in ("reference", "native"):
        c = PromptCache(rt, "full", forward=f, prefill_chunk=MAX_ROWS + 36)
        o = [c.extend(_ids(rt, n_prompt), last_only=True), c.extend([7]), c.extend([8, 9, 10])]
        o.append(c.extend_tree([11, 12, 13, 14, 15], [-1, 0, 0, 2, 1]))
        c.keep_new(len(c.ids) - 5, [0, 2, 3])
        o += [c.extend([16]), c.extend(_ids(rt, 6, seed=3))]
        outs[f] = o
    return outs


@pytest.mark.parametrize("embeddings", [False, True], ids=["float16-embeddings", "int8-embeddings"])
def test_native_int8_matches_the_reference_on_a_random_model(tmp_path, embeddings):
    rt = _runtime(make_tiny_model(tmp_path / "f"), tmp_path / "q", embeddings)
    panels = [rt.native_forward().weights[1], rt.native_forward().head_panels]
    assert panels[0].dtype == torch.int8
    assert (panels[1].dtype == torch.int8) == embeddings
    outs = _paths(rt, 230)
    for a, b in zip(outs["reference"], outs["native"]):
        _close(a, b)


@pytest.mark.slow
def test_native_int8_matches_the_reference_on_the_bundled_model(tmp_path):
    rt = _runtime(BUNDLED_MODEL_DIR, tmp_path / "q", False)
    outs = _paths(rt, 300)
    for a, b in zip(outs["reference"], outs["native"]):
        _close(a, b)


def _vnni(ext):
    if not ext.use_vnni(True):
        pytest.skip("this CPU has no AVX-512 VNNI and VBMI: the int8 panels take float rows")


@pytest.mark.parametrize("n, inn, out", [(1, 256, 688), (3, 672, 256), (8, 64, 37),
                                         (17, 96, 8192), (MAX_ROWS, 128, 40)])
def test_vnni_int8_rows_stay_within_their_bound(n, inn, out):
    ext = load_extension()
    g = torch.Generator().manual_seed(n)
    q, scale = quantize_rows(torch.randn(out, inn, generator=g))
    x = torch.randn(n, inn, generator=g)
    panels = ext.pack_int8_panels(q.t().contiguous(), scale)
    _vnni(ext)
    y = ext.project_packed(x, panels, out)
    ref = x @ dequantize(q, scale).t()
    assert ((y - ref).norm() / ref.norm()).item() <= VNNI_RELATIVE_ERROR


def test_vnni_gives_a_row_the_same_bits_among_any_rows():
    """A draft tree's rows are verified as the one-row steps would have computed them."""
    ext = load_extension()
    g = torch.Generator().manual_seed(5)
    q, scale = quantize_rows(torch.randn(300, 128, generator=g))
    x = torch.randn(21, 128, generator=g)
    panels = ext.pack_int8_panels(q.t().contiguous(), scale)
    _vnni(ext)
    together = ext.project_packed(x, panels, 300)
    for r in (0, 7, 8, 20):
        assert torch.equal(ext.project_packed(x[r:r + 1].contiguous(), panels, 300)[0],
                           together[r])
