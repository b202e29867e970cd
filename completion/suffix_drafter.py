"""Retrieval drafting from suffix indexes (SuffixDecoding's rule).

For each source (the document, the workspace, accepted completions) and each of the
longest match lengths m of the context's tail, the continuations that followed the
matches become a draft tree of up to min(max_spec, alpha * m) tokens; the
best-scoring tree over match lengths and sources is verified.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from .draft_tree import EMPTY, DraftTree, cut, from_continuations
from .suffix_index import Found, StreamIndex, SuffixIndex


class _Local:
    """The request's own tokens (the prompt, indexed once per request, and what was
    generated so far) as a source: the model often repeats what is right there."""

    def __init__(self, prompt: StreamIndex | None, generated: list[int]):
        self.streams = [prompt] if prompt is not None else []
        if len(generated) >= 2:
            self.streams.append(StreamIndex.of([generated]))

    def found(self, context: list[int]) -> list[Found]:
        return [f for s in self.streams for f in s.found(context)]


@dataclass(frozen=True)
class DraftLimits:
    max_spec: int = 24            # longest draft path
    alpha: float = 4.0            # draft length per matched token
    max_nodes: int = 32           # tree size
    floor: float = 0.1            # sibling probability floor
    max_continuations: int = 32   # most recent occurrences used
    lengths_tried: int = 3        # distinct match lengths tried, longest first


class SuffixDrafter:
    def __init__(self, sources: dict[str, SuffixIndex], limits: DraftLimits = DraftLimits()):
        self.sources = sources
        self.limits = limits

    def names(self, request: bool = True) -> list[str]:
        """The sources' names, with ``request`` (the request's own text) when asked."""
        return list(self.sources) + (["request"] if request else [])

    def candidates(self, context: list[int], budget: int, prompt: StreamIndex | None = None,
                   generated: list[int] = (), limits: Callable[[str], DraftLimits] | None = None,
                   only: set[str] | None = None) -> list[DraftTree]:
        """A draft tree after ``context`` per source and tried match length (longest
        first), each with at most ``budget`` tokens per path. ``prompt`` (the request's
        prompt, indexed) and ``generated`` (its tokens so far) are searched too, as the
        source ``request``; ``limits``: each source's limits by name (default: the
        drafter's for all); ``only``: the names searched (all when None)."""
        out = []
        sources = dict(self.sources)
        if prompt is not None or generated:
            sources["request"] = _Local(prompt, list(generated))
        for name, index in sources.items():
            if only is not None and name not in only:
                continue
            found = index.found(context)
            if not found:
                continue
            lim = limits(name) if limits is not None else self.limits
            every = np.concatenate([lengths for _, _, lengths in found])
            for m in np.unique(every)[::-1][:lim.lengths_tried].tolist():
                span = min(budget, lim.max_spec, int(lim.alpha * m))
                if span <= 0:
                    continue
                occ = [(stream, int(e)) for stream, ends, lengths in found
                       for e in ends[lengths >= m][-lim.max_continuations:]]
                conts = [stream.continuation(e, span) for stream, e in
                         occ[-lim.max_continuations:]]
                tree = from_continuations(conts, lim.max_nodes, lim.floor, name, m)
                if tree.tokens:
                    out.append(tree)
        return out

    def draft(self, context: list[int], budget: int, ends: frozenset[int],
              prompt: StreamIndex | None = None, generated: list[int] = (),
              limits: Callable[[str], DraftLimits] | None = None,
              only: set[str] | None = None,
              value: Callable[[DraftTree], float] | None = None) -> DraftTree:
        """The best of the ``candidates`` (the arguments are theirs), cut at ``ends``:
        the highest ``value`` (default: the tree's own score, its expected accepted
        length by the counts)."""
        trees = self.candidates(context, budget, prompt, generated, limits, only)
        return pick(trees, ends, value)


def pick(trees: list[DraftTree], ends: frozenset[int],
         value: Callable[[DraftTree], float] | None = None) -> DraftTree:
    """The tree of ``trees`` with the highest ``value`` (ties: the higher score), cut at
    ``ends``; EMPTY when there is none."""
    if not trees:
        return EMPTY
    key = (lambda t: (value(t), t.score)) if value is not None else (lambda t: t.score)
    return cut(max(trees, key=key), ends)
