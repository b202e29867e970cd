"""Re-rotated keys equal keys computed at the new position."""
import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM, DynamicCache

from inkling.cache.rope import RopeRotator
from inkling.runtime.rotary import UnsupportedRope
from inkling.runtime.model_runtime import cache_keyword


def _model(**overrides):
    torch.manual_seed(0)
    cfg = dict(vocab_size=100, hidden_size=64, intermediate_size=96, num_hidden_layers=1,
               num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512)
    cfg.update(overrides)
    return LlamaForCausalLM(LlamaConfig(**cfg)).eval()


def _layer0_keys(model, ids, start):
    past = DynamicCache(config=model.config)
    pos = torch.arange(start, start + len(ids))[None]
    with torch.no_grad():
        model(input_ids=torch.tensor([ids]), **{cache_keyword(model): past}, position_ids=pos)
    return past.layers[0].keys                                  # [1, kv_heads, n, head_dim]


@pytest.mark.parametrize("rope", [None, {"rope_type": "linear", "factor": 2.0},
                                  {"rope_type": "yarn", "factor": 4.0,
                                   "original_max_position_embeddings": 128}])
@pytest.mark.parametrize("p,q", [(3, 40), (100, 7), (0, 333)])
def test_rerotated_keys_equal_keys_at_new_position(rope, p, q):
    overrides = {} if rope is None else {"rope_parameters": {"rope_theta": 10000.0, **rope}}
    model = _model(**overrides)
    ids = [5, 17, 42, 8, 99]
    at_p, at_q = _layer0_keys(model, ids, p), _layer0_keys(model, ids, q)
    moved = RopeRotator(model).rotate(at_p, q - p)
    assert torch.allclose(moved, at_q, atol=1e-5)
    assert not torch.allclose(at_p, at_q, atol=1e-3)


def test_partial_rotary_dimensions_leave_the_rest_alone():
    model = _model()
    model.model.rotary_emb.inv_freq = model.model.rotary_emb.inv_freq[:4]  # 8 rotary dims of 16
    rot = RopeRotator(model)
    assert rot.rotary_dim == 8
    keys = torch.randn(1, 2, 3, 16)
    out = rot.rotate(keys, 5)
    assert torch.equal(out[..., 8:], keys[..., 8:])
    assert not torch.allclose(out[..., :8], keys[..., :8])


def test_dynamic_ntk_and_longrope_are_refused():
    model = _model(rope_parameters={"rope_theta": 10000.0, "rope_type": "dynamic", "factor": 2.0})
    with pytest.raises(UnsupportedRope, match="dynamic"):
        RopeRotator(model)
