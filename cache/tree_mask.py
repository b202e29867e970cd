"""Positions and the additive attention mask of a token tree."""
from __future__ import annotations

import torch


def ancestors(parents: list[int]) -> list[list[int]]:
    """Per node, its ancestors from the root down, then itself; parents precede children."""
    seen: list[list[int]] = []
    for i, p in enumerate(parents):
        if not -1 <= p < i:
            raise ValueError(f"tree parents must come before their children: {parents}")
        seen.append((seen[p] + [i]) if p >= 0 else [i])
    return seen


def tree_mask(parents: list[int], past: int, dtype: torch.dtype
              ) -> tuple[torch.Tensor, torch.Tensor]:
    """Return (positions [n]: ``past`` + depth, mask [n, past + n]: 0 where a node sees the
    cache, an ancestor or itself), from lists: tensor ops on trees this small are all dispatch."""
    seen = ancestors(parents)
    n = len(parents)
    mask = torch.zeros((n, past + n), dtype=dtype)
    mask[:, past:] = torch.finfo(dtype).min
    mask[[i for i, cols in enumerate(seen) for _ in cols],                # one indexed write
         [past + j for cols in seen for j in cols]] = 0
    return torch.tensor([past + len(cols) - 1 for cols in seen], dtype=torch.long), mask
