"""Draft trees the model verifies in one forward: nodes with parent indices (-1: the root, the
last chosen token). From a match's continuations, a node's D is its share of them; the greedy
path comes first, then siblings best-first while D >= floor; ``score`` sums D on the greedy path."""
from __future__ import annotations

import heapq
from dataclasses import dataclass, field


@dataclass(frozen=True)
class DraftTree:
    tokens: list[int] = field(default_factory=list)
    parents: list[int] = field(default_factory=list)
    score: float = 0.0
    source: str = "none"
    match: int = 0           # how many context tokens matched where it was drafted from

    def __len__(self) -> int:
        return len(self.tokens)

    def depths(self) -> list[int]:
        """Depth of each node (the root's children are at depth 1)."""
        out: list[int] = []
        for p in self.parents:
            out.append(1 if p < 0 else out[p] + 1)
        return out

    def children(self, parent: int) -> dict[int, int]:
        """token -> node index of ``parent``'s children (``parent`` -1 is the root)."""
        return {self.tokens[i]: i for i, p in enumerate(self.parents) if p == parent}


EMPTY = DraftTree()


def linear(tokens: list[int], source: str, score: float | None = None) -> DraftTree:
    return DraftTree(list(tokens), list(range(-1, len(tokens) - 1)),
                     float(len(tokens)) if score is None else score, source)


def _kids(continuations: list[list[int]], members: list[int], depth: int
          ) -> dict[int, list[int]]:
    """token -> the members (of ``continuations``) with it at ``depth``; -1 ends a continuation."""
    kids: dict[int, list[int]] = {}
    for i in members:
        seq = continuations[i]
        if depth < len(seq) and seq[depth] >= 0:
            kids.setdefault(seq[depth], []).append(i)
    return kids


def from_continuations(continuations: list[list[int]], max_nodes: int, floor: float,
                       source: str, match: int = 0) -> DraftTree:
    """The tree of ``continuations`` (each ending at its first -1); a node's children are counted
    only when it enters the tree, so tails no node reaches cost nothing."""
    members = [i for i, seq in enumerate(continuations) if len(seq) and seq[0] >= 0]
    if not members or max_nodes <= 0:
        return EMPTY
    tokens, parents, score = [], [], 0.0
    count, d, parent, depth = len(members), 1.0, -1, 0
    kids = _kids(continuations, members, 0)
    frontier: list[tuple[float, int, int, int, list[int], int]] = []
    tie = 0
    while kids and len(tokens) < max_nodes:
        best_tok, best = max(kids.items(), key=lambda kv: len(kv[1]))
        if d * len(best) / count < floor:
            break
        for tok, kid in kids.items():
            if tok != best_tok:
                tie += 1
                heapq.heappush(frontier, (-d * len(kid) / count, tie, parent, tok, kid, depth))
        d = d * len(best) / count
        tokens.append(best_tok)
        parents.append(parent)
        score += d
        parent, count, depth = len(tokens) - 1, len(best), depth + 1
        kids = _kids(continuations, best, depth)
    while frontier and len(tokens) < max_nodes:
        neg_d, _, p, tok, kid, at = heapq.heappop(frontier)
        if -neg_d < floor:
            break
        tokens.append(tok)
        parents.append(p)
        me = len(tokens) - 1
        for t2, k2 in _kids(continuations, kid, at + 1).items():
            tie += 1
            heapq.heappush(frontier, (neg_d * len(k2) / len(kid), tie, me, t2, k2, at + 1))
    return DraftTree(tokens, parents, score, source, match)


def cut(tree: DraftTree, ends: set[int] | frozenset[int]) -> DraftTree:
    """Drop the descendants of nodes whose token is in ``ends`` (a line end, end of text)."""
    keep_map: dict[int, int] = {}
    tokens, parents = [], []
    for i, (tok, p) in enumerate(zip(tree.tokens, tree.parents)):
        if p >= 0 and (p not in keep_map or tree.tokens[p] in ends):
            continue
        keep_map[i] = len(tokens)
        tokens.append(tok)
        parents.append(-1 if p < 0 else keep_map[p])
    return DraftTree(tokens, parents, tree.score, tree.source, tree.match)
