"""model.weights int8: weights quantized into the native layers' int8 panels as they are read
(runtime/int8_panels.py), on the zoo's real shapes (tests/zoo_models.py).

The panels written in torch are the C++ packer's to the byte; a model read so holds no float
weight (its projections are meta tensors) and gives the logits of the native forward over the
same int8 values held the old way (an int8 folder read as float, its pairs panelled by the
extension) to float rounding; against the float model, the int8 rounding's error, bounded.
A forward longer than the native layers' rows runs in chunks that match one-row steps."""
from __future__ import annotations

import random

import pytest
import torch

from zoo_models import zoo_gguf, zoo_model
from inkling.runtime import int8_panels, panel_cache
from inkling.runtime.errors import ModelError
from inkling.runtime.int8_panels import PanelEmbedding, int8_panels as panels_of, quantized_panels
from inkling.runtime.int8_weights import dequantize, quantize_rows
from inkling.runtime.model_description import resident_bytes
from inkling.runtime.model_loader import load_runtime
from inkling.runtime.model_size import SMALL_MODEL_PARAMS
from inkling.runtime.native_llama import MAX_ROWS, load_extension

FAMILIES = ("qwen2.5-coder-0.5b", "deepseek-coder-1.3b-base")
# the int8 rounding's effect on random-weight logits: relative L2 error, and the share of
# positions whose top token is the float model's (random weights leave near-ties)
MAX_RELATIVE_ERROR, MIN_TOP1_AGREEMENT = 0.05, 0.85


def test_panels_are_the_extensions_to_the_byte():
    ext = load_extension()
    w = torch.randn(37, 24)                                # out not a multiple of 16
    q, scale = quantize_rows(w)
    assert torch.equal(panels_of(q, scale), ext.pack_int8_panels(q.t().contiguous(), scale))


def test_quantizing_by_chunks_is_quantizing_whole(monkeypatch):
    monkeypatch.setattr(int8_panels, "CHUNK_ROWS", 32)
    w = torch.randn(100, 40).to(torch.bfloat16)
    assert torch.equal(quantized_panels(lambda a, b: w[a:b], *w.shape),
                       panels_of(*quantize_rows(w)))


def test_the_embedding_gathers_dequantized_rows():
    w = torch.randn(53, 16)
    q, scale = quantize_rows(w)
    emb = PanelEmbedding(panels_of(q, scale), 53, torch.float32)
    ids = torch.tensor([[0, 52, 17, 16, 15]])
    assert torch.equal(emb(ids), dequantize(q, scale)[ids])


def _ids(rt, n: int, seed: int = 0) -> torch.Tensor:
    g = random.Random(seed)
    return torch.tensor([[g.randrange(3, rt.vocab_size) for _ in range(n)]])


def _logits(rt, ids: torch.Tensor) -> torch.Tensor:
    fwd = rt.forward_for("auto")
    return rt.forward(fwd, ids, fwd.new_store())[0]                     # [n, vocab]


@pytest.fixture(scope="module", params=FAMILIES)
def folder(request):
    return zoo_model(request.param)


@pytest.fixture(scope="module")
def lean(folder):
    return load_runtime(folder, device="cpu", dtype="float32", weights="int8")


def test_a_lean_model_holds_no_float_weight(lean):
    model = lean.model
    assert lean.forward_kind("auto") == "native"
    linears = [m for m in model.modules() if isinstance(m, torch.nn.Linear)]
    assert linears and all(m.weight.is_meta for m in linears)
    panels = sum(p.numel() for p in model.inkling_panels.values())
    assert panels <= resident_bytes(lean) <= panels * 1.05        # the norms, biases, scales


def test_lean_logits_are_the_int8_folders_and_near_the_floats(folder, lean, tmp_path_factory):
    from inkling.training.int8_convert import convert
    int8_folder = tmp_path_factory.mktemp("int8") / "model"
    convert(folder, int8_folder)
    held = load_runtime(int8_folder, device="cpu", dtype="float32", weights="float",
                        forward="native")
    floats = load_runtime(folder, device="cpu", dtype="float32", weights="float",
                          forward="native")
    ids = _ids(lean, 40)
    got, want = _logits(lean, ids), _logits(held, ids)
    assert (got - want).abs().max().item() <= 1e-3 * want.abs().max().item()
    ref = _logits(floats, ids)
    assert ((got - ref).norm() / ref.norm()).item() <= MAX_RELATIVE_ERROR
    assert (got.argmax(-1) == ref.argmax(-1)).float().mean().item() >= MIN_TOP1_AGREEMENT


def test_a_long_forward_runs_in_chunks_that_match_steps(lean):
    ids = _ids(lean, MAX_ROWS * 2 + 9, seed=1)
    fwd = lean.forward_for("auto")
    whole = lean.forward(fwd, ids, fwd.new_store(), keep_last=3)[0]       # [3, vocab]
    kv = fwd.new_store()
    lean.forward(fwd, ids[:, :-3], kv)
    n = ids.shape[1]
    steps = torch.cat([lean.forward(fwd, ids[:, i:i + 1], kv)[0] for i in range(n - 3, n)])
    assert (whole - steps).abs().max().item() <= 1e-4
    assert kv.length == n


def test_superposed_mixing_reads_the_panel_embedding(lean):
    emb = lean.input_embeddings()
    rows = emb(torch.tensor([5, 9]))
    assert rows.shape == (2, lean.model.config.hidden_size) and rows.dtype == torch.float32


@pytest.mark.parametrize("forward", ["compact", "reference"])
def test_a_float_forward_of_a_lean_model_is_one_line(lean, forward):
    with pytest.raises(ModelError, match="model.weights int8 keeps no float weights"):
        lean.forward_kind(forward)


def test_int8_where_it_cannot_run_is_one_line(folder):
    with pytest.raises(ModelError, match="model.weights int8 cannot run here: model.forward "
                                         "compact runs float weights"):
        load_runtime(folder, device="cpu", dtype="float32", weights="int8", forward="compact")
    with pytest.raises(ModelError, match="model.weights must be one of auto, float, int8"):
        load_runtime(folder, device="cpu", weights="int4")


def test_auto_keeps_a_small_model_float(folder):
    rt = load_runtime(folder, device="cpu", dtype="float32")          # weights auto
    assert rt.params < SMALL_MODEL_PARAMS and not int8_panels.is_lean(rt.model)


def test_a_q8_0_gguf_read_lean_gives_the_folders_int8_logits():
    name = "qwen2.5-coder-0.5b"
    gguf = load_runtime(zoo_gguf(name, "q8_0"), device="cpu", dtype="float32", weights="int8")
    folder = load_runtime(zoo_model(name), device="cpu", dtype="float32", weights="float",
                          forward="native")
    assert int8_panels.is_lean(gguf.model)
    ids = _ids(gguf, 24, seed=2)
    got, ref = _logits(gguf, ids), _logits(folder, ids)
    assert ((got - ref).norm() / ref.norm()).item() <= MAX_RELATIVE_ERROR
    assert (got.argmax(-1) == ref.argmax(-1)).float().mean().item() >= MIN_TOP1_AGREEMENT


def test_the_next_start_reads_the_panels_kept_on_disk(folder, monkeypatch, tmp_path):
    monkeypatch.setattr(panel_cache, "cache_folder", lambda name: tmp_path / name)
    first = load_runtime(folder, device="cpu", dtype="float32", weights="int8")
    kept = list((tmp_path / "weights").glob("*.safetensors"))
    assert len(kept) == 1

    def refused(*args):
        raise AssertionError("quantized again")
    monkeypatch.setattr(int8_panels, "quantized_panels", refused)
    again = load_runtime(folder, device="cpu", dtype="float32", weights="int8")
    assert again.model.inkling_panels.keys() == first.model.inkling_panels.keys()
    for name, panels in first.model.inkling_panels.items():
        assert torch.equal(again.model.inkling_panels[name], panels), name
    ids = _ids(first, 12, seed=3)
    assert torch.equal(_logits(again, ids), _logits(first, ids))


def test_a_broken_panel_file_is_quantized_again(folder, monkeypatch, tmp_path):
    monkeypatch.setattr(panel_cache, "cache_folder", lambda name: tmp_path / name)
    kept = panel_cache.cache_file(folder)
    kept.parent.mkdir(parents=True)
    kept.write_bytes(b"not a safetensors file")
    rt = load_runtime(folder, device="cpu", dtype="float32", weights="int8")
    assert int8_panels.is_lean(rt.model)
    assert panel_cache.read(kept).keys() == rt.model.inkling_panels.keys()   # written anew
