"""The edit-consistent cache: hunks, modes, staleness, refresh, pool."""
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inkling.cache.cache_pool import CachePool
from inkling.cache.edit_hunks import segments
from inkling.runtime.model_loader import load_runtime
from inkling.cache.prompt_cache import PromptCache

from conftest import make_tiny_model

BASE = ("import os\n\n\ndef walk(root):\n    for name in os.listdir(root):\n"
        "        print(name)\n    return root\n\n\nclass Box:\n    size = 3\n")


def fresh_logits(runtime, ids):
    reference = runtime.forward_for("reference")
    return runtime.forward(reference, torch.tensor([ids]), reference.new_store())[0, -1]


@pytest.fixture(scope="module")
def one_layer_runtime(tmp_path_factory):
    """Layer-0 keys and values depend on the token and its position only, so with one
    layer a correct re-rotation makes pie exact."""
    d = make_tiny_model(tmp_path_factory.mktemp("one-layer"), num_hidden_layers=1, seed=3)
    return load_runtime(d, device="cpu", dtype="float32")


edits = st.lists(st.tuples(st.floats(0, 1), st.integers(0, 12), st.sampled_from(
    ["x", "    y = 2\n", "", "é", "name", "\n\n", "😀"])), min_size=1, max_size=6)


def apply(text, edit):
    where, delete, insert = edit
    at = int(where * len(text))
    return text[:at] + insert + text[at + delete:]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(edits)
def test_full_mode_matches_fresh_forward(tiny_runtime, seq):
    cache, text = PromptCache(tiny_runtime, "full"), BASE
    for edit in seq:
        text = apply(text, edit)
        ids = tiny_runtime.encode(text) or [0]
        result = cache.sync(ids)
        assert cache.ids == ids                         # what the cache holds is the prompt
        assert result.reused + result.prefilled == len(ids)
        assert torch.allclose(result.logits, fresh_logits(tiny_runtime, ids), atol=1e-4)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(edits)
def test_pie_is_exact_where_keys_do_not_depend_on_context(one_layer_runtime, seq):
    rt = one_layer_runtime
    pie, naive, text = PromptCache(rt, "pie", 1.0), PromptCache(rt, "naive", 1.0), BASE
    pie.sync(rt.encode(text))
    naive.sync(rt.encode(text))
    for edit in seq:
        text = apply(text, edit)
        ids = rt.encode(text) or [0]
        got = pie.sync(ids)
        assert pie.ids == ids and len(pie.stale) == len(ids)
        assert torch.allclose(got.logits, fresh_logits(rt, ids), atol=1e-4)
        naive.sync(ids)
        assert naive.ids == ids


def test_naive_splice_is_wrong_after_a_shift(one_layer_runtime):
    rt = one_layer_runtime
    pie, naive = PromptCache(rt, "pie", 1.0), PromptCache(rt, "naive", 1.0)
    old = rt.encode(BASE)
    new = rt.encode("# a comment that shifts everything\n" + BASE)
    for c in (pie, naive):
        c.sync(old)
    exact = fresh_logits(rt, new)
    p, n = pie.sync(new), naive.sync(new)
    assert p.reused > 0.8 * len(old) and p.prefilled < 20
    pie_err = (p.logits - exact).abs().max()
    naive_err = (n.logits - exact).abs().max()
    assert pie_err < 1e-4
    assert naive_err > 1e-4 and naive_err > 10 * pie_err


def test_staleness_and_refresh(tiny_runtime):
    rt = tiny_runtime
    cache = PromptCache(rt, "pie", stale_threshold=0.9)
    cache.sync(rt.encode(BASE))
    assert cache.stale_count == 0
    edited = rt.encode("import sys\n" + BASE)
    result = cache.sync(edited)
    assert result.stale > 0.5 * len(edited) and not result.refreshed
    first_stale = cache.stale.index(True)
    assert cache.refresh() == len(edited) - first_stale >= result.stale
    assert cache.stale_count == 0 and cache.ids == edited
    # a low threshold refreshes during the sync instead
    low = PromptCache(rt, "pie", stale_threshold=0.1)
    low.sync(rt.encode(BASE))
    again = low.sync(edited)
    assert again.refreshed and again.stale == 0 and low.stale_count == 0
    assert torch.allclose(again.logits, fresh_logits(rt, edited), atol=1e-4)


def test_front_deletion_is_a_shift_not_a_recompute(tiny_runtime):
    rt = tiny_runtime
    cache = PromptCache(rt, "pie", stale_threshold=1.0)
    ids = rt.encode(BASE * 3)
    cache.sync(ids)
    slid = ids[25:]                                     # the window slid forward
    result = cache.sync(slid)
    assert result.prefilled == 1 and result.reused == len(slid) - 1


def test_a_window_edge_that_moved_leaves_no_stale_tokens(tiny_runtime):
    """Tokens dropped at a window's edge with no edit there shift what follows without
    making it stale; the same change anywhere else (or without the edge named) is an edit."""
    rt = tiny_runtime
    head, body = rt.encode("import os\n"), rt.encode(BASE * 3)
    ids = [head[0]] + body
    for edges, stale in ((((1, 2),), False), ((), True), (((5, 6),), True)):
        cache = PromptCache(rt, "pie", stale_threshold=1.0)
        cache.sync(ids)
        result = cache.sync([head[0]] + body[25:], edges)       # the window's front moved
        assert (result.stale > 0) == stale and result.prefilled == 1
    # an edit inside the window still marks what follows it stale, edge named or not
    cache = PromptCache(rt, "pie", stale_threshold=1.0)
    cache.sync(ids)
    edited = [head[0]] + body[25:40] + rt.encode("x = 1\n") + body[40:]
    result = cache.sync(edited, ((1, 2),))
    assert result.stale >= len(body) - 41 and cache.stale.index(True) > 15


def test_engine_names_a_moved_edge_only_where_no_edit_was(tiny_runtime):
    from inkling.completion.document import Position, Range, TextChange
    from inkling.completion.engine import Engine
    from inkling.completion.options import InklingOptions
    eng = Engine(InklingOptions().merged({"completion": {"prefix_tokens": 120, "suffix_tokens": 40,
                                                         "fim_order": "psm"}}), tiny_runtime)
    text = "".join(f"value_{i} = compute({i})\n" for i in range(300))
    eng.open("file:///w.py", text)
    line = 150
    eng.complete("file:///w.py", Position(line, 0))
    stale = []
    for i in range(12):                 # type lines at the cursor: the front moves in jumps
        eng.apply_change("file:///w.py", [TextChange(f"typed_{i} = {i}\n",
                                                                Range(Position(line, 0), Position(line, 0)))])
        line += 1
        out = eng.complete("file:///w.py", Position(line, 0))
        stale.append(out.stale_tokens)
    # psm: the suffix after the cursor is stale after each keystroke, nothing before it is
    assert max(stale) <= 60, stale
    # an edit above the window (line 3) makes the moved front an edit: all is stale
    eng.apply_change("file:///w.py", [TextChange("# n\n", Range(Position(3, 0), Position(3, 0)))])
    out = eng.complete("file:///w.py", Position(line + 1, 0))
    assert out.stale_tokens > 100 or out.refreshed


def test_inconsistent_cache_falls_back_to_full(tiny_runtime, caplog):
    rt = tiny_runtime
    cache = PromptCache(rt, "pie")
    ids = rt.encode(BASE)
    cache.sync(ids)
    cache.ids = cache.ids[:-3]                          # ids no longer match the tensors
    with caplog.at_level("WARNING", logger="inkling.cache"):
        result = cache.sync(ids)
    assert "recomputing (full)" in caplog.text
    assert result.prefilled == len(ids)
    assert torch.allclose(result.logits, fresh_logits(rt, ids), atol=1e-4)



def test_a_splice_whose_forward_fails_leaves_no_cache_to_trust(tiny_runtime, monkeypatch):
    """The forward of a pie splice fails after the kept runs were gathered (holes for
    the new tokens still empty): the next sync recomputes instead of reading the holes."""
    rt = tiny_runtime
    cache = PromptCache(rt, "pie")
    cache.sync(rt.encode(BASE))
    edited = rt.encode(BASE.replace("print(name)", "print(name, root)"))

    def broken(*args, **kwargs):
        raise RuntimeError("out of memory")
    monkeypatch.setattr(rt, "forward", broken)
    with pytest.raises(RuntimeError, match="out of memory"):
        cache.sync(edited)
    monkeypatch.undo()
    result = cache.sync(edited)
    assert result.prefilled == len(edited)
    assert torch.allclose(result.logits, fresh_logits(rt, edited), atol=1e-4)

def test_unsupported_rope_uses_full_with_a_reason(tmp_path, caplog):
    d = make_tiny_model(tmp_path / "ntk", rope_parameters={"rope_theta": 10000.0,
                                                           "rope_type": "dynamic", "factor": 2.0})
    rt = load_runtime(d, device="cpu", dtype="float32")
    with caplog.at_level("WARNING", logger="inkling.cache"):
        cache = PromptCache(rt, "pie")
    assert cache.mode == "full" and "dynamic" in caplog.text


def test_segments_find_several_hunks():
    old = list(range(100))
    new = old[:10] + [500, 501] + old[10:60] + old[64:]      # an insertion and a deletion
    segs = segments(old, new)
    kept = [s for s in segs if s.kept]
    assert [(s.old_start, len(s)) for s in kept] == [(0, 10), (10, 50), (64, 36)]
    assert [s.shift for s in kept] == [0, 2, -2]


def test_pool_evicts_least_recent_within_budget():
    pool = CachePool(100, size_of=lambda item: item["size"])
    pool.get("a", lambda: {"size": 60})
    pool.get("b", lambda: {"size": 30})
    pool.get("a", lambda: {"size": 0})                        # a is recent again
    pool.get("c", lambda: {"size": 40})
    pool.trim()
    assert pool.keys() == ["a", "c"] and pool.evictions == 1


@pytest.mark.parametrize("keep", [[0, 1, 2], [0, 3, 4], [0, 3], [0]])
def test_keeping_a_verified_path_leaves_the_cache_of_that_path(tiny_runtime, keep):
    """After a tree forward, keeping one root-to-node path (a prefix of the rows or
    not) leaves exactly the cache a plain forward of that path gives."""
    head = [5, 9, 14, 3, 22, 7]
    tokens, parents = [30, 31, 32, 33, 34], [-1, 0, 1, 0, 3]     # 30 -> 31 -> 32, 30 -> 33 -> 34
    cache = PromptCache(tiny_runtime, mode="full")
    cache.extend(head, last_only=True)
    cache.extend_tree(tokens, parents)
    cache.keep_new(len(head), keep)
    path = [tokens[i] for i in keep]
    assert cache.ids == head + path and len(cache.stale) == len(cache.ids)
    assert cache.past.get_seq_length() == len(head) + len(path)
    fresh = PromptCache(tiny_runtime, mode="full")
    fresh.extend(head + path, last_only=True)
    got, want = cache.extend([40]), fresh.extend([40])
    assert torch.allclose(got, want, atol=1e-5)


@pytest.mark.parametrize("mode", ["full", "pie"])
def test_a_draft_runs_in_the_prompts_forward_when_the_sync_appends(tiny_runtime, mode):
    """Typing appends a few tokens: the draft tree after the prompt runs in the same
    forward, with the logits a separate tree forward gives, and keeping its accepted
    path leaves the cache of prompt + path."""
    rt = tiny_runtime
    head = rt.encode(BASE)
    prompt = head + rt.encode("    x = 1\n")
    tokens, parents = [30, 31, 32, 33], [-1, 0, -1, 2]          # 30 -> 31, 32 -> 33
    cache = PromptCache(rt, mode, 1.0)
    cache.sync(head)
    synced = cache.sync(prompt, draft=(tokens, parents))
    assert synced.draft_logits is not None and synced.draft_logits.shape[0] == len(tokens)
    assert cache.ids == prompt + tokens
    ref = PromptCache(rt, "full")
    assert torch.allclose(ref.sync(prompt).logits, synced.logits, atol=1e-4)
    want = ref.extend_tree(tokens, parents)                  # after the whole prompt
    assert torch.allclose(want, synced.draft_logits, atol=1e-4)
    cache.keep_new(len(prompt) - 1, [0, 3, 4])                 # the prompt's last, 32, 33
    assert cache.ids == prompt + [32, 33]
    fresh = PromptCache(rt, "full")
    fresh.sync(prompt + [32, 33])
    assert torch.allclose(cache.extend([40]), fresh.extend([40]), atol=1e-4)


def test_a_draft_is_not_run_with_a_large_prefill_or_a_splice(tiny_runtime):
    rt = tiny_runtime
    ids = rt.encode(BASE)
    draft = ([30, 31], [-1, 0])
    cold = PromptCache(rt, "pie", 1.0)
    assert len(ids) > 64 and cold.sync(ids, draft=draft).draft_logits is None
    assert cold.ids == ids                                       # no node cached
    edited = rt.encode(BASE.replace("print(name)", "print(name, root)"))
    spliced = cold.sync(edited, draft=draft)                     # an edit in the middle
    assert spliced.draft_logits is None and cold.ids == edited
