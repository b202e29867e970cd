"""Packed grouped-query attention: a masked forward of several query tokens over a
cache gives the logits transformers' own SDPA path gives, without repeating the
cached keys and values."""
import pytest
import torch

from conftest import make_tiny_model
from inkling.runtime.gqa_attention import NAME
from inkling.runtime.model_loader import load_runtime
from inkling.cache.prompt_cache import PromptCache


def _reference(path):
    from transformers import AutoModelForCausalLM
    rt = load_runtime(path, device="cpu", dtype="float32")
    rt.model = AutoModelForCausalLM.from_pretrained(
        path, dtype=torch.float32, attn_implementation="sdpa").eval()
    return rt


@pytest.mark.parametrize("kv_heads", [1, 2])
def test_tree_forward_matches_sdpa_and_keys_are_not_repeated(tmp_path, kv_heads, monkeypatch):
    path = make_tiny_model(tmp_path / "m", num_attention_heads=4, num_key_value_heads=kv_heads)
    packed, plain = load_runtime(path, device="cpu", dtype="float32"), _reference(path)
    # transformers' forward over inkling's modules, built when first called, runs it packed
    assert packed.model.reference().config._attn_implementation == NAME
    assert plain.model.config._attn_implementation == "sdpa"
    context = torch.randint(3, packed.vocab_size, (60,)).tolist()
    tokens, parents = [5, 6, 7, 8, 9], [-1, 0, 1, 0, 3]      # two paths of a draft tree
    seen = []
    sdpa = torch.nn.functional.scaled_dot_product_attention

    def spy(q, k, v, **kw):
        seen.append((q.shape[1], k.shape[1]))
        return sdpa(q, k, v, **kw)

    monkeypatch.setattr(torch.nn.functional, "scaled_dot_product_attention", spy)
    logits = []
    for rt in (packed, plain):
        # the compact forward's attention (auto would run the native layers' own)
        cache = PromptCache(rt, mode="full", forward="compact" if rt is packed else "auto")
        cache.extend(context, last_only=True)
        seen.clear()
        logits.append(cache.extend_tree(tokens, parents))
        heads = set(seen)
        # the second forward (the tree) ran every layer over the cached key/value heads
        # as they are when packed, and over repeated ones on transformers' path
        want = (kv_heads, kv_heads) if rt is packed else (4, 4)
        assert heads == {want}, heads
    assert torch.allclose(logits[0], logits[1], atol=1e-5), (logits[0] - logits[1]).abs().max()


def test_a_model_without_grouped_heads_stays_on_sdpa(tmp_path):
    path = make_tiny_model(tmp_path / "m", num_attention_heads=4, num_key_value_heads=4)
    rt = load_runtime(path, device="cpu", dtype="float32")
    assert rt.model.config._attn_implementation == "sdpa"
