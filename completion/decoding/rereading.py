"""Rereading: the beam's finished drafts ranked by how the file reads with each in place.

A fill-in-the-middle model scores a draft given the prefix and the suffix, but a small one
makes little use of the suffix: its likeliest line often does not lead into the line after
it. Rereading scores each draft a second time with the same model read plainly left to
right (half of its training rows are plain files): the log-probability of the cursor's
line with the draft in place and of the ``lines`` lines after it, given the
``window`` tokens before the cursor's line. That is the noisy-channel check of the file
as a whole, p(draft | prefix) p(next lines | prefix, draft), and the draft's rank becomes
its fill-in-the-middle rank (``beam.ranked``) plus that log-probability. On the model
card's held-out lines (run-8 weights, beam width 8, `benchmarks/rereading.py`) it raised
the first draft's exact match from 14.3% to 15.6% on the standard library and from 7.0% to
10.1% on toolz, at about twice the beam's p50 (the window's forward). Scored offline, the
line with 1, 2 or 4 lines after it ranked alike (2 a hair better on toolz), the line
alone did worse than the beam's own rank, and a window of 1536 tokens no better than 768.

Every draft is scored in one forward pass after the window's: the drafts' token sequences
form a tree (drafts that start alike share their first tokens' nodes), each node seeing
the window and its ancestors (``PromptCache.extend_tree``). The window is run in a
cache of its own, made for the completion and dropped after it.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from inkling.cache.prompt_cache import PromptCache
from inkling.runtime.model_runtime import ModelRuntime

from inkling.completion.decoding.steps import Cancelled


@dataclass(frozen=True)
class Rereading:
    """What a completion's drafts are reread against: the ``before`` ids (the window up to
    the cursor's line), the cursor line's text before the cursor (``line_start``) and the
    text after the cursor up to the end of the ``lines``-th line below (``after``)."""
    runtime: ModelRuntime
    before: list[int]
    line_start: str
    after: str

    @classmethod
    def of_text(cls, runtime: ModelRuntime, prefix: str, suffix: str, lines: int,
                window: int) -> "Rereading":
        """The rereading of the ``prefix`` and ``suffix`` texts around a cursor: the
        last ``window`` tokens before the cursor's line, the ``lines`` lines after it."""
        cut = prefix.rfind("\n") + 1
        before = runtime.encode(prefix[:cut])[-window:] if cut else []
        end = suffix.find("\n")                         # the end of the cursor's line
        for _ in range(lines):
            if end < 0:
                break
            end = suffix.find("\n", end + 1)
        return cls(runtime, before, prefix[cut:], suffix if end < 0 else suffix[:end])

    def scores(self, texts: list[str], cancelled=lambda: False) -> list[float]:
        """Each draft text's log-probability read in place (the cursor line's start, the
        draft, the lines after), given ``before``: one forward pass for all of them after
        the window's."""
        seqs = [self.runtime.encode(self.line_start + t + self.after) for t in texts]
        tokens, parents, node_of = _trie(seqs)
        if not tokens:
            return [0.0] * len(texts)
        cache = PromptCache(self.runtime, "full")
        # row 0: the window's last position (what the first token is read after), row 1 + i:
        # node i's; with nothing before, the first token is free (row 0 not read)
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
    """The token tree of ``seqs``: (tokens, parents (-1: a root), each sequence's node
    indices in order); sequences that start alike share those nodes."""
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
    """``drafts`` (steps.Decoded, their ``score`` the decoder's rank) ranked again: each
    one's score gains the log-probability of its text as ``shown`` (its ``shown_text``;
    None: as it is) read in place."""
    if len(drafts) < 2:
        return drafts
    texts = [shown.shown_text(d.text) if shown else d.text for d in drafts]
    extra = rereading.scores(texts, cancelled)
    for d, lp in zip(drafts, extra):
        d.score = (d.score if d.score is not None else 0.0) + lp
    return drafts
