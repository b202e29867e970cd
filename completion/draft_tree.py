"""Draft trees: candidate continuations the model verifies in one forward pass.

Nodes are draft tokens with parent indices (-1: the root, which is the last token
the model chose and is not yet in the cache). Built from the continuations that
followed a matched context: counts give each node a probability
D = prod count(child) / count(parent); the greedy path (highest counts) comes first,
then siblings best-first, every node while its D is at least a floor: the tree is the
nodes with D >= floor, as far as the node budget allows. The score, the sum of D over
the greedy path, estimates how many tokens will be accepted (SuffixDecoding).
"""
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


class _Trie:
    def __init__(self):
        self.count = 0
        self.kids: dict[int, _Trie] = {}


def _trie(continuations: list[list[int]]) -> _Trie:
    root = _Trie()
    for seq in continuations:
        if not seq:
            continue
        root.count += 1
        node = root
        for tok in seq:
            node = node.kids.setdefault(tok, _Trie())
            node.count += 1
    return root


def from_continuations(continuations: list[list[int]], max_nodes: int, floor: float,
                       source: str, match: int = 0) -> DraftTree:
    """The greedy path through the continuations' count trie, then siblings best-first,
    each node while its share D of the continuations is at least ``floor``."""
    root = _trie(continuations)
    if not root.count or max_nodes <= 0:
        return EMPTY
    tokens, parents, score = [], [], 0.0
    node, d, parent = root, 1.0, -1
    frontier: list[tuple[float, int, int, int, _Trie]] = []   # (-D, tiebreak, parent, token, node)
    tie = 0
    while node.kids and len(tokens) < max_nodes:
        best_tok, best = max(node.kids.items(), key=lambda kv: kv[1].count)
        if d * best.count / node.count < floor:
            break
        for tok, kid in node.kids.items():
            if tok != best_tok:
                tie += 1
                heapq.heappush(frontier, (-d * kid.count / node.count, tie, parent, tok, kid))
        d = d * best.count / node.count
        tokens.append(best_tok)
        parents.append(parent)
        score += d
        parent, node = len(tokens) - 1, best
    while frontier and len(tokens) < max_nodes:
        neg_d, _, p, tok, kid = heapq.heappop(frontier)
        if -neg_d < floor:
            break
        tokens.append(tok)
        parents.append(p)
        me = len(tokens) - 1
        for t2, k2 in kid.kids.items():
            tie += 1
            heapq.heappush(frontier, (neg_d * k2.count / kid.count, tie, me, t2, k2))
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
