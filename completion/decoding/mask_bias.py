"""A token mask as the bias the logits take: 0 where a token is allowed, -inf where not.
Adding a kept bias is cheaper than a masked fill and gives the same finite logits
(docs/decisions/monitor-masks.md)."""
from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np
import torch


class MaskBiases:
    """The biases of recent masks by identity, at most ``max_bytes`` (LRU); locked for any thread.
    Each entry holds its mask, so no other mask can take its identity while kept."""

    def __init__(self, max_bytes: int = 16 << 20):
        self.max_bytes = max_bytes
        self._kept: OrderedDict = OrderedDict()     # key -> (mask, bias)
        self._bytes = 0
        self._lock = threading.Lock()

    def bias(self, mask: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
        """[n] of ``like``'s dtype and device: 0 where ``mask`` allows a token, -inf elsewhere."""
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


_TABLE = np.array([-np.inf, 0.0], dtype=np.float32)      # bias by allowed (0 or 1)


def biased(mask: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """The bias of ``mask`` for logits like ``like`` (made, not kept). On the CPU one numpy
    pass over the mask: torch's fill reads an inverse it builds, and splits a large
    vocabulary's arrays over threads (docs/decisions/monitor-masks.md)."""
    n = like.shape[-1]
    if mask.device.type == "cpu" and like.device.type == "cpu":
        bias = np.full(n, -np.inf, dtype=np.float32)          # ids past the mask: -inf
        m = min(n, mask.shape[-1])
        _TABLE.take(mask[:m].numpy().view(np.uint8), out=bias[:m])
        out = torch.from_numpy(bias)
        return out if like.dtype == torch.float32 else out.to(like.dtype)
    allowed = mask[:n].to(like.device)
    if allowed.shape[-1] < n:                       # ids the tokenizer does not know
        allowed = torch.cat((allowed, allowed.new_zeros(n - allowed.shape[-1])))
    return torch.zeros(n, dtype=like.dtype, device=like.device).masked_fill_(
        ~allowed, float("-inf"))
