"""Masks applied as biases: the same logits as ``masked_fill`` (the reference), kept per
mask and bounded."""
from __future__ import annotations

import torch

from inkling.completion.decoding.mask_bias import MaskBiases
from inkling.completion.decoding.steps import masked


class _Monitor:
    def __init__(self, mask):
        self._mask = mask

    def mask(self, device=None):
        return self._mask


def _reference(logits, mask):
    n = logits.shape[-1]
    allowed = torch.cat((mask, mask.new_zeros(max(0, n - mask.shape[-1]))))[:n]
    return logits.masked_fill(~allowed, float("-inf"))


def test_the_bias_gives_the_masked_fill_logits():
    g = torch.Generator().manual_seed(0)
    for vocab, mask_len in ((50, 50), (50, 47), (50, 60), (8192, 8192)):
        logits = torch.randn(vocab, generator=g) * 10
        logits[3] = 0.0
        logits[4] = -0.0
        mask = torch.rand(mask_len, generator=g) > 0.6
        out = masked(logits, _Monitor(mask))
        ref = _reference(logits, mask)
        assert torch.equal(out, ref)
        assert int(torch.argmax(out)) == int(torch.argmax(ref))
        assert torch.equal(torch.log_softmax(out, -1), torch.log_softmax(ref, -1))
    for dtype in (torch.float16, torch.bfloat16):
        logits = torch.randn(64, generator=g).to(dtype)
        mask = torch.rand(64, generator=g) > 0.5
        out = masked(logits, _Monitor(mask))
        assert out.dtype == dtype and torch.equal(out, _reference(logits, mask))


def test_no_mask_leaves_the_logits_alone():
    logits = torch.randn(10)
    assert masked(logits, None) is logits
    assert masked(logits, _Monitor(None)) is logits


def test_a_mask_is_biased_once_and_the_kept_biases_stay_under_their_bound():
    biases = MaskBiases(max_bytes=3 * 100 * 4)
    like = torch.zeros(100)
    masks = [torch.rand(100) > 0.5 for _ in range(5)]
    first = biases.bias(masks[0], like)
    assert biases.bias(masks[0], like) is first              # kept, not made again
    for m in masks[1:]:
        biases.bias(m, like)
    assert len(biases._kept) == 3 and biases._bytes == 3 * 100 * 4
    assert biases.bias(masks[0], like) is not first          # the oldest went first
    other = torch.rand(100) > 0.5                            # a new mask: its own bias
    assert torch.equal(biases.bias(other, like) == 0, other)
