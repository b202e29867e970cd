"""The native forward (runtime/native_llama.py, its layers in C++) against transformers'.

The same PromptCache paths as test_compact_forward.py (prefill in chunks, some larger
than the native rows, appends, chains, draft trees and their accepted paths, pie splices
with re-rotated keys, a branch's gathered cache, superposed embeddings) on random-weight
Llama, Mistral and Qwen2 (q / k / v biases) models, grouped and not: logits within 1e-4 of
the reference, greedy tokens identical, the buffers' keys and values within float
rounding. The C++ sums in its own order, so equality to the bit is not expected; the
result must not depend on the thread count. Where every weight is a float16 value the panels are float16 (else
bfloat16 where every weight is a bfloat16 value), and their sums must equal the float32
panels' to the bit. What it cannot run is refused with the reason.
"""
import pytest
import torch

from conftest import make_tiny_model
from inkling.runtime import native_llama
from inkling.runtime.errors import ModelError
from inkling.runtime.model_loader import load_runtime
from inkling.runtime.native_llama import MAX_ROWS, NativeBuffers, load_extension
from inkling.cache.prompt_cache import PromptCache
from test_compact_forward import FAMILIES, _ids, _model
from test_compact_forward import _same as _close     # within 1e-4, the same argmax

NATIVE_FAMILIES = sorted(FAMILIES)


@pytest.fixture(scope="module", params=NATIVE_FAMILIES)
def runtime(request, tmp_path_factory):
    rt = load_runtime(_model(tmp_path_factory.mktemp("m"), request.param), device="cpu",
                      dtype="float32")
    assert rt.forward_kind("native") == "native"
    return rt


def _both(rt, mode="full", **kw):
    return {f: PromptCache(rt, mode, forward=f, **kw) for f in ("reference", "native")}


def test_appends_chains_trees_and_accepted_paths(runtime):
    caches = _both(runtime, prefill_chunk=MAX_ROWS + 36)     # chunks past the native rows
    prompt = _ids(runtime, 230)
    outs = {}
    for name, c in caches.items():
        o = [c.extend(prompt, last_only=True),
             c.extend([7]), c.extend([8, 9, 10]), c.extend(_ids(runtime, 40, seed=9))]
        o.append(c.extend_tree([11, 12, 13, 14, 15], [-1, 0, 0, 2, 1]))
        c.keep_new(len(c.ids) - 5, [0, 2, 3])
        o += [c.extend([16]), c.rerun(3)]
        o.append(c.extend_tree([17, 18], [-1, 0]))
        c.keep_new(len(c.ids) - 2, [0])
        o.append(c.extend([19]))
        o.append(c.extend(_ids(runtime, 6, seed=3)))      # five to seven rows: padded to eight
        wide = [-1, 0, 0, 1, 1, 2, 3, 3, 4, 5, 6, 6, 7, 8, 9, 10, 11, 12, 13, 14]
        o.append(c.extend_tree(list(range(20, 40)), wide))   # a masked forward of 21 rows
        c.keep_new(len(c.ids) - 20, [0, 1, 3, 6])
        o.append(c.extend([41]))
        outs[name] = o
    assert type(caches["native"].past) is NativeBuffers
    for a, b in zip(outs["reference"], outs["native"]):
        _close(a, b)
    ref, nat = caches["reference"].past, caches["native"].past
    assert nat.get_seq_length() == ref.get_seq_length() == len(caches["native"].ids)
    for x, y in zip(ref.layers, nat.layers):
        assert torch.allclose(x.keys, y.keys, atol=1e-4, rtol=0)
        assert torch.allclose(x.values, y.values, atol=1e-4, rtol=0)


def test_pie_edits_and_large_splices(runtime):
    caches = _both(runtime, "pie", stale_threshold=1.0, prefill_chunk=40)
    base = _ids(runtime, 150, seed=1)
    edits = [base[:20] + [5, 6] + base[20:],
             base[:10] + base[14:] + [9],
             base[:60] + _ids(runtime, 50, seed=2) + base[60:],
             base[5:] + [4]]
    for ids in edits:
        got = {name: c.sync(ids) for name, c in caches.items()}
        assert got["reference"].mode == got["native"].mode
        assert got["reference"].reused == got["native"].reused
        _close(got["reference"].logits, got["native"].logits)


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
        if name == "native":
            assert type(alone.past) is NativeBuffers                # the type travels
        outs[name] = [tree, alone.rerun(2, last_only=False), alone.extend([24])]
        c.truncate(70)
        outs[name].append(c.extend_embeds(emb))
    for a, b in zip(outs["reference"], outs["native"]):
        _close(a, b)


def test_greedy_tokens_identical(runtime):
    tokens = {}
    for name, c in _both(runtime).items():
        logits, out = c.extend(_ids(runtime, 90, seed=4), last_only=True)[-1], []
        for _ in range(40):
            out.append(int(logits.argmax()))
            logits = c.extend([out[-1]])[-1]
        tokens[name] = out
    assert tokens["reference"] == tokens["native"]


def test_projection_matches_torch_for_any_shape():
    ext = load_extension()
    g = torch.Generator().manual_seed(0)
    for n, inner, out in ((1, 64, 64), (3, 256, 688), (6, 256, 40), (17, 70, 33),
                            (64, 128, 1000)):
        x = torch.randn(n, inner, generator=g)
        w = torch.randn(inner, out, generator=g)
        assert torch.allclose(ext.project_rows(x, w), x @ w, atol=1e-4, rtol=1e-5)
    with pytest.raises(RuntimeError, match="do not chain"):
        ext.project_rows(torch.randn(2, 5), torch.randn(6, 3))
    with pytest.raises(RuntimeError, match="float32"):
        ext.project_rows(torch.randn(2, 5, dtype=torch.float64), torch.randn(5, 3))


def test_float16_panels_make_the_same_sums_as_float32_ones():
    # weights that are float16 values: panels of either storage give the same bits, at
    # every row count (one row reads float16 directly, more rows widen each panel)
    ext = load_extension()
    g = torch.Generator().manual_seed(1)
    for n in (1, 2, 3, 4, 5, 7, 8, 9, 17, 64):
        x = torch.randn(n, 256, generator=g)
        w = torch.randn(256, 200, generator=g).half().float()
        y = ext.project_rows(x, w, "float16")
        assert torch.equal(y, ext.project_rows(x, w))
        assert torch.allclose(y, x @ w, atol=1e-4, rtol=1e-5)
        assert torch.equal(ext.project_packed(x, ext.pack_panels(w, "float16"), 200), y)
    with pytest.raises(RuntimeError, match="not every weight is a float16 value"):
        ext.pack_panels(torch.full((4, 3), 0.1), "float16")
    with pytest.raises(RuntimeError, match="do not fit"):
        ext.project_packed(torch.randn(2, 4), ext.pack_panels(torch.randn(4, 40)), 50)


@pytest.fixture(scope="module")
def half_valued(tmp_path_factory):
    """A model whose weights are float16 values (saved in float16, as the bundled model's
    shards), loaded in float32: its native forward holds float16 panels."""
    from transformers import AutoModelForCausalLM
    path = make_tiny_model(tmp_path_factory.mktemp("f16"), hidden_size=128,
                           intermediate_size=344, num_attention_heads=8, num_key_value_heads=2)
    AutoModelForCausalLM.from_pretrained(path).half().save_pretrained(path)
    rt = load_runtime(path, device="cpu", dtype="float32")
    assert rt.forward_kind("native") == "native"
    return rt


def test_float16_valued_weights_run_float16_panels(half_valued, monkeypatch):
    rt = half_valued
    native = rt.native_forward()
    if not load_extension().fast_half():
        pytest.skip("this CPU has no F16C: the panels stay float32")
    assert native.storage == "float16" and native.head_panels.dtype == torch.float16
    assert all(w.dtype == torch.float16 for w in native.weights if w.dim() == 3)
    # the same logits as the reference, greedy tokens the same, through every cache path
    both = _both(rt)
    out = {name: [c.extend(_ids(rt, 70, seed=2), last_only=True), c.extend([7]),
                  c.extend([8, 9, 10]), c.extend_tree([3, 4, 5, 6], [-1, 0, 0, 2])]
           for name, c in both.items()}
    for a, b in zip(out["reference"], out["native"]):
        _close(a, b)
    # float16 panels give the float32 panels' bits, layers and output layer, at any rows
    monkeypatch.setattr(native_llama, "panel_storage", lambda *a: "float32")
    wide = native_llama.NativeLlama(rt.model)
    assert wide.storage == "float32" and wide.head_panels.dtype == torch.float32
    embeds = rt.model.get_input_embeddings()(torch.tensor([[5, 6, 7, 8, 9, 10, 11, 12, 13]]))
    outs = []
    for forward in (native, wide):
        kv = forward.new_buffers(torch.float32, torch.device("cpu"))
        outs.append([forward.forward(kv, embeds[:, :n], torch.arange(at, at + n)[None])
                     for at, n in ((0, 9), (9, 1), (10, 2), (12, 3))])
    assert all(torch.equal(a, b) for a, b in zip(*outs))


@pytest.mark.parametrize("half", [False, True], ids=["float32-panels", "float16-panels"])
def test_the_thread_count_does_not_change_a_bit(tmp_path, half):
    # large enough that projections split across threads (PARALLEL_MIN_MACS); every
    # forward within the native rows (more run MKL's GEMM, which sums by thread count)
    path = make_tiny_model(tmp_path / "wide", hidden_size=256, intermediate_size=688,
                           num_attention_heads=8, num_key_value_heads=2)
    if half:                                    # weights that are float16 values
        from transformers import AutoModelForCausalLM
        AutoModelForCausalLM.from_pretrained(path).half().save_pretrained(path)
    rt = load_runtime(path, device="cpu", dtype="float32")
    assert (rt.native_forward().storage == "float16") == (half and load_extension().fast_half())
    before = torch.get_num_threads()
    outs = []
    try:
        for threads in (1, 2):
            torch.set_num_threads(threads)
            c = PromptCache(rt, "full", forward="native", prefill_chunk=MAX_ROWS)
            outs.append([c.extend(_ids(rt, 50, seed=6), last_only=True), c.extend([5]),
                         c.extend_tree([6, 7, 8], [-1, 0, 0])])
    finally:
        torch.set_num_threads(before)
    for a, b in zip(*outs):
        assert torch.equal(a, b)


def test_what_the_native_forward_cannot_run_is_refused(tmp_path, monkeypatch):
    half = load_runtime(make_tiny_model(tmp_path / "half"), device="cpu", dtype="bfloat16")
    with pytest.raises(ModelError, match="native layers are float32.*model.forward auto"):
        PromptCache(half, "full", forward="native")
    assert PromptCache(half, "full").forward.name == "compact"     # auto: the compact forward,
    assert "float32" in half.auto_note()                         # saying why not native
    with pytest.raises(ModelError, match="native layers are float32"):   # native: at load
        load_runtime(tmp_path / "half", device="cpu", dtype="bfloat16", forward="native")
    # q / k / v biases run (Qwen2: the families above); an output projection's are refused
    biased = load_runtime(make_tiny_model(tmp_path / "bias", attention_bias=True),
                          device="cpu", dtype="float32")
    assert biased.model.model.layers[0].self_attn.o_proj.bias is not None
    with pytest.raises(ModelError, match="biases in the output projection or the MLP"):
        biased.forward_kind("native")
    assert PromptCache(biased, "full").forward.name == "compact"


def test_auto_is_native_where_it_is_built(tiny_model_dir):
    load_extension()                    # built (auto never waits: test_native_build.py)
    rt = load_runtime(tiny_model_dir, device="cpu", dtype="float32")   # model.forward auto
    assert isinstance(rt.forwards.native, native_llama.NativeLlama)  # made at load
    assert PromptCache(rt, "full").forward.name == "native" and rt.auto_note() == ""
    assert PromptCache(rt, "full", forward="compact").forward.name == "compact"
    assert load_runtime(tiny_model_dir, device="cpu", dtype="float32",
                        forward="compact").forwards.native is None     # not built for compact


def test_auto_leaves_large_models_to_the_compact_forward(tiny_model_dir, monkeypatch):
    monkeypatch.setattr(native_llama, "NATIVE_AUTO_MAX_PARAMS", 1000)
    rt = load_runtime(tiny_model_dir, device="cpu", dtype="float32")
    assert rt.forwards.native is None                           # not even built
    assert PromptCache(rt, "full").forward.name == "compact"
    assert "M parameters" in rt.auto_note() and "model.forward native" in rt.auto_note()
    assert PromptCache(rt, "full", forward="native").forward.name == "native"   # asked: it runs


@pytest.mark.parametrize("asked", ["native", "auto"])
def test_layers_packed_for_the_compact_forward_run_native(tiny_model_dir, monkeypatch, asked):
    """Projections large enough for oneDNN's packed layout (the MLP of a 0.5 B model) are
    packed where the compact forward may serve (auto); the native layers make their panels
    from an unpacked copy. With model.forward native asked they stay [in, out]. Either way
    the native layers run them, within 1e-4 of the reference, the same greedy tokens."""
    from inkling.runtime import cpu_layout
    monkeypatch.setattr(cpu_layout, "PACK_MIN_WEIGHTS", 1000)
    rt = load_runtime(tiny_model_dir, device="cpu", dtype="float32", forward=asked)
    packed = isinstance(rt.model.model.layers[0].mlp.up_proj, cpu_layout.PackedLinear)
    assert packed == (asked == "auto")
    caches = _both(rt)
    assert caches["native"].forward.name == "native"
    assert PromptCache(rt, "full").forward.name == "native"
    prompt = _ids(rt, 70, seed=5)
    _close(*(c.extend(prompt)[-8:] for c in caches.values()))
    tokens = {}
    for name, c in caches.items():
        logits, out = c.extend([prompt[0]])[-1], []
        for _ in range(20):
            out.append(int(logits.argmax()))
            logits = c.extend([out[-1]])[-1]
        tokens[name] = out
    assert tokens["reference"] == tokens["native"]


def test_a_build_failure_names_the_compilers_error():
    exc = RuntimeError("Error building extension 'x': [1/2] c++ -O3 -c a.cpp\nFAILED: a.o\n"
                       "a.cpp:3:1: error: 'foo' was not declared in this scope\nninja: stopped")
    said = native_llama._first_lines(exc)
    assert said.startswith("RuntimeError: Error building extension 'x'")
    assert said.endswith("a.cpp:3:1: error: 'foo' was not declared in this scope")


def test_a_failed_build_is_an_error_naming_it(tiny_model_dir, monkeypatch, caplog):
    builds = []

    def no_compiler():
        builds.append(1)
        raise OSError("g++: command not found")
    load_extension()                    # the module built: auto loads it (and fails here)
    monkeypatch.setattr(native_llama, "EXTENSION_BUILD", native_llama._Extension())
    monkeypatch.setattr(native_llama, "_build", no_compiler)
    with pytest.raises(ModelError, match="did not build.*g\\+\\+: command not found"):
        load_runtime(tiny_model_dir, device="cpu", dtype="float32", forward="native")
    # auto: the compact forward, with a warning that names the failure, once, at load
    caplog.clear()
    rt = load_runtime(tiny_model_dir, device="cpu", dtype="float32")
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warned) == 1 and "g++: command not found" in warned[0], warned
    assert PromptCache(rt, "full").forward.name == "compact"
    assert "did not build" in rt.auto_note()
    for _ in range(2):                                  # the reason is kept, not retried
        with pytest.raises(ModelError, match="did not build.*g\\+\\+: command not found"):
            PromptCache(rt, "full", forward="native")
    assert len(builds) == 1
    assert PromptCache(rt, "full", forward="compact").forward.name == "compact"
