"""Positions and the attention mask of a token tree, built with tensor ops.

A draft tree of n nodes is given by parent indices (``parents[i] < i``, -1 for a root).
Node i must see every ancestor and itself: the ancestor relation is the transitive
closure of "parent of", found by squaring the boolean adjacency matrix ceil(log2 n)
times (a handful of small matrix products, no loop over nodes).
"""
from __future__ import annotations

import torch


def tree_sees(parents: list[int]) -> torch.Tensor:
    """[n, n] bool: node i sees node j (j is i or one of its ancestors)."""
    n = len(parents)
    p = torch.tensor(parents, dtype=torch.long)                           # [n]
    if n and (bool((p >= torch.arange(n)).any()) or bool((p < -1).any())):
        raise ValueError(f"tree parents must come before their children: {parents}")
    step = torch.eye(n)                                                   # [n, n] float 0/1
    has = p >= 0
    step[torch.arange(n)[has], p[has]] = 1.0                             # i -> its parent
    reach, hops = step, 1
    while hops < n:                           # ceil(log2 n) squarings: paths of any length
        reach = (reach @ reach).clamp_(max=1.0)
        hops *= 2
    return reach > 0


def tree_mask(parents: list[int], past: int, dtype: torch.dtype
              ) -> tuple[torch.Tensor, torch.Tensor]:
    """(positions [n]: ``past`` + depth, additive mask [n, past + n]: 0 where node i
    may attend (the whole cache, its ancestors, itself), ``finfo(dtype).min`` elsewhere)."""
    sees = tree_sees(parents)                                             # [n, n]
    depth = sees.sum(1) - 1                                               # [n]
    n = len(parents)
    mask = torch.zeros((n, past + n), dtype=dtype)
    mask[:, past:] = torch.finfo(dtype).min
    mask[:, past:].masked_fill_(sees, 0)
    return past + depth, mask
