"""The rotary table (runtime/rotary.py) against the model's own rotary module: row for row
the same cos and sin (sin's first half negated) at any position, past the table's first
size too, for the static rotary types; the others are not tabled."""
import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM

from inkling.runtime.compact_llama import CompactLlama
from inkling.runtime.rotary import RopeTable, signed_rope, static_rope

ROPES = {
    "default": None,
    "linear": {"rope_type": "linear", "factor": 4.0},
    "llama3": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
               "high_freq_factor": 4.0, "original_max_position_embeddings": 64},
}


def _model(rope: dict | None, head_dim: int = 32) -> LlamaForCausalLM:
    cfg = LlamaConfig(vocab_size=64, hidden_size=4 * head_dim, intermediate_size=64,
                      num_hidden_layers=1, num_attention_heads=4, num_key_value_heads=2,
                      max_position_embeddings=256, rope_scaling=rope)
    return LlamaForCausalLM(cfg).eval()


@pytest.mark.parametrize("kind", sorted(ROPES))
@pytest.mark.parametrize("head_dim", [32, 20])
def test_the_table_holds_what_the_module_computes(kind, head_dim):
    model = _model(ROPES[kind], head_dim)
    rotary = model.model.rotary_emb
    table = RopeTable(rotary, torch.float32, capacity=64)
    g = torch.Generator().manual_seed(0)
    for positions in (torch.tensor([0]), torch.tensor([63]), torch.randint(0, 64, (7,), generator=g),
                      torch.tensor([64, 5, 1000]),            # past the table: it grows
                      torch.arange(0, 2000, 37)):
        cos, sin = table.rows(positions)
        want_cos, want_sin = signed_rope(*rotary(torch.zeros(1), position_ids=positions[None]))
        assert torch.equal(cos, want_cos[0, 0]) and torch.equal(sin, want_sin[0, 0]), positions
    assert table.capacity >= 2000


def test_only_static_rotary_types_are_tabled():
    assert static_rope(_model(None).config) and static_rope(_model(ROPES["llama3"]).config)
    dynamic = _model({"rope_type": "dynamic", "factor": 2.0})
    assert not static_rope(dynamic.config)
    assert CompactLlama(dynamic).rope_table is None           # the module at every forward
    assert CompactLlama(_model(None)).rope_table is not None
