"""KVBuffers' splice: moving only what is after a kept head gives the same store as
moving everything."""
import torch
from hypothesis import given, settings, strategies as st

from inkling.runtime.kv_buffers import KVBuffers


def _store(length: int, seed: int) -> KVBuffers:
    kv = KVBuffers(layers=2, kv_heads=2, head_dim=4, dtype=torch.float32,
                   device=torch.device("cpu"))
    kv.reserve(length)
    g = torch.Generator().manual_seed(seed)
    kv.keys[..., :length, :] = torch.randn(kv.keys[..., :length, :].shape, generator=g)
    kv.values[..., :length, :] = torch.randn(kv.values[..., :length, :].shape, generator=g)
    kv.length = length
    return kv


@settings(max_examples=60, deadline=None)
@given(length=st.integers(1, 600), data=st.data())
def test_gather_after_a_kept_head_equals_the_whole_gather(length, data):
    head = data.draw(st.integers(0, length))                 # kept in place
    cut = data.draw(st.integers(head, length))               # old entries dropped: head..cut
    new = data.draw(st.integers(0, 40))                      # new tokens after the head
    index = torch.cat([torch.arange(head), torch.zeros(new, dtype=torch.long),
                       torch.arange(cut, length)])
    holes = torch.arange(head, head + new)
    whole, part = _store(length, 1), _store(length, 1)
    whole.gather(index, holes)
    part.gather(index, holes, start=head)
    assert whole.length == part.length == len(index)
    n = len(index)
    assert torch.equal(whole.keys[..., :n, :], part.keys[..., :n, :])
    assert torch.equal(whole.values[..., :n, :], part.values[..., :n, :])
    assert not part.keys[..., head:head + new, :].any()      # the holes are zeros
