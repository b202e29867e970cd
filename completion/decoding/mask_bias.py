"""A token mask as the bias the logits take: 0 where a token is allowed, -inf where not.

The monitor's masks are shared and cached (``analysis/token_masks.py``), so most are
applied at many steps; their biases are kept here, by the mask's identity. In the
decoding loop ``logits + bias`` took 5.4 us a step at p50 against 17.1 for
``logits.masked_fill(~mask, -inf)`` (the bundled vocabulary of 8,192 tokens; the masked
fill reads a bool mask and makes its inverse first), and both give the same logits where
the logits are finite: ``x + 0.0`` is ``x`` and ``x + -inf`` is ``-inf``.
"""
from __future__ import annotations

import threading
from collections import OrderedDict

import torch


class MaskBiases:
    """The biases of the masks applied last, at most ``max_bytes`` of them (least recently
    used out first). Each entry holds its mask, so no other mask can take its identity
    while it is kept. The model worker's thread uses it; the lock makes any other safe."""

    def __init__(self, max_bytes: int = 16 << 20):
        self.max_bytes = max_bytes
        self._kept: OrderedDict = OrderedDict()     # key -> (mask, bias)
        self._bytes = 0
        self._lock = threading.Lock()

    def bias(self, mask: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
        """``[n]`` of ``like``'s type and device (``like``: logits ``[n]``): 0 where ``mask``
        (bool ``[vocab']``) allows a token, -inf where it does not or past its end."""
        n = like.shape[-1]
        key = (id(mask), n, like.dtype, like.device)
        with self._lock:
            found = self._kept.get(key)
            if found is not None and found[0] is mask:
                self._kept.move_to_end(key)
                return found[1]
        bias = biased(mask, like)
        size = bias.numel() * bias.element_size()
        with self._lock:
            old = self._kept.pop(key, None)
            if old is not None:
                self._bytes -= old[1].numel() * old[1].element_size()
            self._kept[key] = (mask, bias)
            self._bytes += size
            while self._bytes > self.max_bytes and len(self._kept) > 1:
                _, (_, gone) = self._kept.popitem(last=False)
                self._bytes -= gone.numel() * gone.element_size()
        return bias


def biased(mask: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """The bias of ``mask`` for logits like ``like`` (made, not kept)."""
    n = like.shape[-1]
    allowed = mask[:n].to(like.device)
    if allowed.shape[-1] < n:                       # ids the tokenizer does not know
        allowed = torch.cat((allowed, allowed.new_zeros(n - allowed.shape[-1])))
    return torch.zeros(n, dtype=like.dtype, device=like.device).masked_fill_(
        ~allowed, float("-inf"))
