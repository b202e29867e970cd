"""transformers' forward over inkling's DynamicKV on a model with a sliding attention window
shorter than the prompt: every layer keeps every entry and its position, and the window,
applied by the mask, gives transformers' own uncached logits; chunked prefills, token trees,
trims, branches and splices keep the store, its positions and the ids in step."""
import json
import shutil

import pytest
import torch

from inkling.cache.prompt_cache import PromptCache
from inkling.runtime.model_loader import load_runtime

from zoo_models import zoo_model

WINDOW = 8
TEXT = ("def area(radius):\n    return 3.14159 * radius * radius\n\n\n"
        "def ring(outer, inner):\n    return area(outer) - area(inner)\n\n\nprint(area(2))\n")


def _windowed(tmp_path, name: str, **config) -> "ModelRuntime":
    """The zoo's tiny ``name`` with ``config`` changed: a window far shorter than a prompt."""
    folder = tmp_path / name
    shutil.copytree(zoo_model(name), folder)
    cfg = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**cfg, **config}))
    return load_runtime(folder, device="cpu", dtype="float32")


@pytest.fixture(scope="module", params=["starcoder2", "qwen2-hybrid"])
def runtime(request, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("windowed")
    if request.param == "starcoder2":           # every layer slides
        return _windowed(tmp, "starcoder2-3b", sliding_window=WINDOW)
    # layer 0 full, layer 1 sliding: a mask for each layer type
    return _windowed(tmp, "qwen2.5-coder-0.5b", use_sliding_window=True, max_window_layers=1,
                     sliding_window=WINDOW)


def _uncached(runtime, ids: list[int]) -> torch.Tensor:
    """transformers' own logits [len(ids), vocab], its window by its own mask, no cache."""
    with torch.inference_mode():
        return runtime.model(input_ids=torch.tensor([ids]), use_cache=False).logits[0].float()


def _in_step(cache, rotated: bool = True) -> bool:
    """Every layer and the positions in step with the ids, each entry at its place (where
    ``rotated``: ``naive`` leaves a shifted entry at the position its key was rotated for)."""
    return cache.consistent() and cache.past.lengths() == {len(cache.ids)} and \
        (not rotated or cache.past.positions.tolist() == list(range(len(cache.ids))))


def test_the_window_matters_and_the_reference_forward_applies_it(runtime):
    ids = runtime.encode(TEXT)
    assert len(ids) > 3 * WINDOW
    want = _uncached(runtime, ids)
    cache = PromptCache(runtime, "full", prefill_chunk=WINDOW - 3, forward="reference")
    got = cache.extend(ids)                                        # in chunks across the window
    assert _in_step(cache)
    assert torch.allclose(got, want, atol=1e-4)


def test_a_tree_past_the_window_needs_the_window_applied(runtime, monkeypatch):
    ids = runtime.encode(TEXT)
    want = _uncached(runtime, ids)[-3:]
    for applied in (True, False):
        cache = PromptCache(runtime, "full", forward="reference")
        if not applied:                          # a custom mask reaches transformers as it is
            monkeypatch.setattr(cache.forward, "window", None)
        cache.sync(ids[:-3])
        rows = cache.extend_tree(ids[-3:], [-1, 0, 1])
        assert torch.allclose(rows, want, atol=1e-4) == applied


def test_a_tree_a_trim_and_a_branch_match_the_uncached_forward(runtime):
    ids = runtime.encode(TEXT)
    prompt, path = ids[:-4], ids[-4:]
    cache = PromptCache(runtime, "full", forward="reference")
    cache.sync(prompt)
    # a tree: path[0] -> path[1] -> path[2], and path[3] a second child of path[0]
    rows = cache.extend_tree([path[0], path[1], path[2], path[3]], [-1, 0, 1, 0])
    want = _uncached(runtime, prompt + path[:3])
    assert torch.allclose(rows[:3], want[len(prompt):], atol=1e-4)
    other = _uncached(runtime, prompt + [path[0], path[3]])[-1]
    assert torch.allclose(rows[3], other, atol=1e-4)
    branch = cache.gathered(list(range(len(prompt))) + [len(prompt), len(prompt) + 3])
    assert _in_step(branch)
    assert torch.allclose(branch.extend(path[:1])[-1],
                          _uncached(runtime, prompt + [path[0], path[3], path[0]])[-1], atol=1e-4)
    cache.keep_new(len(prompt), [0, 3])            # the second branch kept, the rest dropped
    assert _in_step(cache) and cache.ids == prompt + [path[0], path[3]]
    assert torch.allclose(cache.extend(path[1:2])[-1],
                          _uncached(runtime, prompt + [path[0], path[3], path[1]])[-1], atol=1e-4)
    cache.truncate(len(prompt) - 5)
    assert _in_step(cache)
    assert torch.allclose(cache.extend(prompt[-5:])[-1], _uncached(runtime, prompt)[-1],
                          atol=1e-4)


@pytest.mark.parametrize("mode", ["pie", "naive"])
def test_a_splice_keeps_every_entry_at_its_new_position(runtime, mode):
    text = TEXT
    cache = PromptCache(runtime, mode, stale_threshold=1.0, forward="reference")
    cache.sync(runtime.encode(text))
    for edited in (text.replace("radius * radius", "radius ** 2"),
                   "import math\n" + text.replace("3.14159", "math.pi")):
        ids = runtime.encode(edited)
        result = cache.sync(ids)
        assert result.reused > 0 and cache.ids == ids and _in_step(cache, mode == "pie")
    cache.refresh()                                # the stale entries recomputed in place
    assert _in_step(cache, mode == "pie")
    assert torch.allclose(cache.extend(ids[-1:])[-1], _uncached(runtime, ids + ids[-1:])[-1],
                          atol=1e-4)
