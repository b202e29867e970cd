"""Rereading: the beam's drafts ranked again by how the file reads with each in place.
A small fill-in-the-middle model reads the suffix badly, so each draft gains the plain left-to-right
log-probability of its line and those after it (docs/decisions/invoked-decoder.md)."""
from __future__ import annotations

from dataclasses import dataclass

import torch

from inkling.cache.modes import CacheMode
from inkling.cache.prompt_cache import PromptCache
from inkling.runtime.model_runtime import ModelRuntime

from inkling.completion.decoding.steps import Cancelled


@dataclass(frozen=True)
class Rereading:
    """What drafts are reread against: the window ids ``before`` the line, its start, ``after``."""
    runtime: ModelRuntime
    before: list[int]
    line_start: str
    after: str

    @classmethod
    def of_text(cls, runtime: ModelRuntime, prefix: str, suffix: str, lines: int,
                window: int) -> "Rereading":
        """The rereading around a cursor: ``window`` tokens before its line, ``lines`` after."""
        cut = prefix.rfind("\n") + 1
        before = runtime.encode(prefix[:cut])[-window:] if cut else []
        end = suffix.find("\n")                         # the end of the cursor's line
        for _ in range(lines):
            if end < 0:
                break
            end = suffix.find("\n", end + 1)
        return cls(runtime, before, prefix[cut:], suffix if end < 0 else suffix[:end])

    def scores(self, texts: list[str], cancelled=lambda: False) -> list[float]:
        """Each draft text's log-probability read in place after ``before``, in one forward."""
        seqs = [self.runtime.encode(self.line_start + t + self.after) for t in texts]
        tokens, parents, node_of = _trie(seqs)
        if not tokens:
            return [0.0] * len(texts)
        cache = PromptCache(self.runtime, CacheMode.FULL)
        # row 0: the window's last position (unread with nothing before), row 1 + i: node i's
        head = cache.sync(self.before).logits[None] if self.before else None      # [1, vocab]
        if cancelled():
            raise Cancelled()
        rows = cache.extend_tree(tokens, parents)                             # [nodes, vocab]
        if head is None:
            head = torch.zeros_like(rows[:1])
        logp = torch.log_softmax(torch.cat((head, rows)).float(), -1)   # [1 + nodes, vocab]
        at, ids, owner = [], [], []
        for i, (seq, nodes) in enumerate(zip(seqs, node_of)):
            if not seq:                                   # nothing to read: 0
                continue
            reads = ([0] if self.before else []) + [n + 1 for n in nodes[:-1]]
            at.extend(reads)
            ids.extend(seq[len(seq) - len(reads):])
            owner.extend([i] * len(reads))
        picked = logp[torch.tensor(at, device=logp.device),
                      torch.tensor(ids, device=logp.device)].tolist()     # one gather, one copy
        out = [0.0] * len(texts)
        for i, lp in zip(owner, picked):
            out[i] += lp
        return out


def _trie(seqs: list[list[int]]) -> tuple[list[int], list[int], list[list[int]]]:
    """The token tree of ``seqs``: (tokens, parents (-1: a root), each sequence's nodes)."""
    tokens: list[int] = []
    parents: list[int] = []
    children: dict[tuple[int, int], int] = {}
    node_of = []
    for seq in seqs:
        at, nodes = -1, []
        for tok in seq:
            node = children.get((at, tok))
            if node is None:
                node = children[(at, tok)] = len(tokens)
                tokens.append(tok)
                parents.append(at)
            nodes.append(node)
            at = node
        node_of.append(nodes)
    return tokens, parents, node_of


def reread(drafts: list, rereading: Rereading, shown=None, cancelled=lambda: False) -> list:
    """``drafts`` with each ``score`` plus its text's rereading (as ``shown`` shows it)."""
    if len(drafts) < 2:
        return drafts
    texts = [shown.shown_text(d.text) if shown else d.text for d in drafts]
    extra = rereading.scores(texts, cancelled)
    for d, lp in zip(drafts, extra):
        d.score = (d.score if d.score is not None else 0.0) + lp
    return drafts
