"""Retrieval drafting from suffix indexes (SuffixDecoding's rule): one candidate tree per source
and match length m, of up to min(max_spec, alpha * m) tokens; one is built and verified."""
from __future__ import annotations

import time
from dataclasses import dataclass
from functools import cached_property
from typing import Callable

import numpy as np

from inkling.completion.drafting.draft_tree import EMPTY, DraftTree, cut, from_continuations
from inkling.completion.drafting.suffix_index import (ANCHORS, MAX_MATCH, MAX_OCCURRENCES,
                                                      SEPARATOR, Found, StreamIndex, SuffixIndex)


class _Local:
    """What the request generated so far (the model repeats itself), scanned: too short to index."""

    def __init__(self, generated: list[int]):
        self.generated = list(generated)

    def found(self, context: list[int]) -> list[Found]:
        """What ``StreamIndex.found`` gives for the generated tokens as one stream."""
        g, n = self.generated, len(self.generated)
        for k in ANCHORS:
            if len(context) < k:
                continue
            tail = context[-k:]
            ends = [i + k for i in range(n - k) if g[i:i + k] == tail]   # something follows
            if not ends:
                continue
            lengths = []
            for e in ends:
                m, most = k, min(MAX_MATCH, e, len(context))
                while m < most and g[e - 1 - m] == context[-1 - m]:
                    m += 1
                lengths.append(m)
            stream = StreamIndex.of([g], layout="scan")
            return [(stream, np.asarray(ends[-MAX_OCCURRENCES:], np.int64),
                     np.asarray(lengths[-MAX_OCCURRENCES:], np.int64))]
        return []


@dataclass(frozen=True)
class DraftLimits:
    max_spec: int = 24            # longest draft path
    alpha: float = 4.0            # draft length per matched token
    max_nodes: int = 32           # tree size
    floor: float = 0.1            # share of the continuations a node needs
    max_continuations: int = 32   # most recent occurrences used
    lengths_tried: int = 3        # distinct match lengths tried, longest first


class SuffixDrafter:
    def __init__(self, sources: dict[str, SuffixIndex], limits: DraftLimits = DraftLimits()):
        self.sources = sources
        self.limits = limits

    def names(self, request: bool = True) -> list[str]:
        """The sources' names, with ``request`` (the request's own text) when asked."""
        return list(self.sources) + (["request"] if request else [])

    def candidates(self, context: list[int], budget: int, generated: list[int] = (),
                   limits: Callable[[str], DraftLimits] | None = None,
                   only: set[str] | None = None,
                   spent: dict[str, float] | None = None) -> list["Candidate"]:
        """The candidates after ``context`` by source and match length, ``budget`` tokens a path at
        most; ``generated`` is the source ``request``; ``limits``: by source name; ``only``: the
        names searched (None: all); ``spent``: filled with each search's ms."""
        out = []
        sources = dict(self.sources)
        if len(generated) >= 2:
            sources["request"] = _Local(generated)
        for name, index in sources.items():
            if only is not None and name not in only:
                continue
            t0 = time.perf_counter()
            out += self._candidates(name, index, context, budget, limits)
            if spent is not None:
                spent[name] = (time.perf_counter() - t0) * 1000
        return out

    def _candidates(self, name: str, index, context: list[int], budget: int,
                    limits: Callable[[str], DraftLimits] | None) -> list["Candidate"]:
        out = []
        found = index.found(context)
        if found:
            lim = limits(name) if limits is not None else self.limits
            every = np.concatenate([lengths for _, _, lengths in found])
            for m in sorted(set(every.tolist()), reverse=True)[:lim.lengths_tried]:
                span = min(budget, lim.max_spec, int(lim.alpha * m))
                if span <= 0:
                    continue
                occurrences, room = [], lim.max_continuations  # each has a token after it
                for stream, ends, lengths in reversed(found):      # the most recent kept
                    if room <= 0:
                        break
                    ends = ends[lengths >= m][-room:]
                    if len(ends):
                        occurrences.append((stream, ends))
                        room -= len(ends)
                if occurrences:
                    out.append(Candidate(name, m, lim, tuple(reversed(occurrences)), span))
        return out

    def draft(self, context: list[int], budget: int, ends: frozenset[int],
              generated: list[int] = (), limits: Callable[[str], DraftLimits] | None = None,
              only: set[str] | None = None,
              value: Callable[["Candidate"], float] | None = None) -> DraftTree:
        """The tree ``pick`` makes of the ``candidates`` (same arguments), cut at ``ends``."""
        return pick(self.candidates(context, budget, generated, limits, only), ends, value)


@dataclass(frozen=True, eq=False)
class Candidate:
    """One source's continuations after one match length, its rows gathered when first asked."""
    source: str
    match: int
    limits: DraftLimits
    occurrences: tuple = ()   # ((stream, ends [e]), ...): where they start, the most recent last
    span: int = 0             # tokens per continuation

    @property
    def count(self) -> int:
        """How many continuations it has (its rows, without gathering them)."""
        if "rows" in self.__dict__:
            return len(self.__dict__["rows"])
        return sum(len(ends) for _, ends in self.occurrences)

    @cached_property
    def rows(self) -> np.ndarray:
        """[continuations, span] token ids, -1 after each one's end."""
        return np.concatenate([_rows(stream, ends, self.span)
                               for stream, ends in self.occurrences])

    def tree(self) -> DraftTree:
        return from_continuations(self.rows.tolist(), self.limits.max_nodes, self.limits.floor,
                                  self.source, self.match)

    def kept(self, output: list[int]) -> int:
        """How many tokens of ``output`` its tree would accept, from its rows (a node needs a
        share D of the continuations at least the floor); past the node budget, an upper bound."""
        rows = self.rows
        alive = np.ones(len(rows), bool)
        d, n = 1.0, 0
        for j in range(min(rows.shape[1], len(output), self.limits.max_nodes)):
            col = rows[alive, j]                     # continuations through the node
            d = d * int(np.count_nonzero(col == output[j])) / len(col)   # the tree's order
            if d == 0 or d < self.limits.floor:
                break
            alive &= rows[:, j] == output[j]
            n += 1
        return n


def _rows(stream: StreamIndex, ends: np.ndarray, span: int) -> np.ndarray:
    """The ``span`` tokens after each of ``ends``: [len(ends), span], -1 past a separator or end."""
    at = ends[:, None] + np.arange(span)[None, :]                    # [e, span]
    rows = stream.toks[np.minimum(at, len(stream.toks) - 1)]
    over = (at >= len(stream.toks)) | (rows == SEPARATOR)
    rows = rows.astype(np.int64)
    rows[np.cumsum(over, axis=1) > 0] = -1
    return rows


def pick(candidates: list[Candidate], ends: frozenset[int],
         value: Callable[[Candidate], float] | None = None) -> DraftTree:
    """The tree, cut at ``ends``, of the candidate of highest ``value`` (ties: longer match, more
    continuations; only it is built), else the highest-scoring tree; EMPTY for none."""
    if not candidates:
        return EMPTY
    if value is not None:
        best = max(candidates, key=lambda c: (value(c), c.match, c.count))
        return cut(best.tree(), ends)
    trees = [c.tree() for c in candidates]
    return cut(max(trees, key=lambda t: t.score), ends)
