"""Retrieval drafting from suffix indexes (SuffixDecoding's rule).

For each source (the document, the workspace, accepted completions, the datastores,
the request's own output) and each of the longest match lengths m of the context's
tail, the continuations that followed the matches are a candidate: the draft tree of
up to min(max_spec, alpha * m) tokens they would make. One candidate is made into a
tree and verified: by default the best-scoring, or the one a ``value`` (the measured
acceptance of its source at its match length) rates highest. The others are kept as
token rows, so what each would have kept can be scored once the output is known,
without building their trees.
"""
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
    """What the request generated so far as a source: the model often repeats what it
    has just written. (The prompt is the document's text, which the document source
    indexes already.) A few dozen tokens, searched anew at every step: a scan of the
    Python list costs a tenth of what building and searching an index did."""

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
        """The candidates after ``context``, per source and tried match length (longest
        first), each with at most ``budget`` tokens per path. ``generated`` (the
        request's tokens so far) is searched too, as the source ``request``;
        ``limits``: each source's limits by name (default: the drafter's for all);
        ``only``: the names searched (all when None); ``spent``: filled with each
        searched source's search time in ms."""
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
                # every occurrence found has something after it (StreamIndex.found)
                occurrences, room = [], lim.max_continuations
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
        """The tree of the best of the ``candidates`` (the arguments are theirs), cut
        at ``ends``; see ``pick``."""
        return pick(self.candidates(context, budget, generated, limits, only), ends, value)


@dataclass(frozen=True, eq=False)
class Candidate:
    """The continuations one source has after one match length: a draft tree to be.

    Its token rows are gathered when first asked for: the chosen candidate's before its
    tree is verified, the others' when the completion's output scores them, after the
    answer (their streams are immutable, so the rows are the same then)."""
    source: str
    match: int
    limits: DraftLimits
    occurrences: tuple = ()   # ((stream, ends [e]), ...): where the continuations start,
                              # the most recent last
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
        """How many tokens of ``output`` the candidate's tree would accept, from its
        rows: a node is in the tree when its share D of the continuations is at least
        the floor (``from_continuations``). Exact when the tree's node budget is not
        reached; past it, nodes the budget left out are counted as kept."""
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
    """The ``span`` tokens after each of ``ends`` in ``stream``: [len(ends), span], -1
    from the first separator (or the stream's end) on."""
    at = ends[:, None] + np.arange(span)[None, :]                    # [e, span]
    rows = stream.toks[np.minimum(at, len(stream.toks) - 1)]
    over = (at >= len(stream.toks)) | (rows == SEPARATOR)
    rows = rows.astype(np.int64)
    rows[np.cumsum(over, axis=1) > 0] = -1
    return rows


def pick(candidates: list[Candidate], ends: frozenset[int],
         value: Callable[[Candidate], float] | None = None) -> DraftTree:
    """The tree, cut at ``ends``, of the candidate with the highest ``value`` (among
    equals the longer match, then the more continuations: only that one is built);
    without a ``value``, the tree with the highest score of all. EMPTY when there is
    none."""
    if not candidates:
        return EMPTY
    if value is not None:
        best = max(candidates, key=lambda c: (value(c), c.match, c.count))
        return cut(best.tree(), ends)
    trees = [c.tree() for c in candidates]
    return cut(max(trees, key=lambda t: t.score), ends)
