"""Greedy decoding with draft trees verified in one forward pass (lossless for greedy).

Each step: the root is the token the model just chose (not yet in the cache); a
drafter proposes a tree after it; the root and the tree run through the model in one
forward with a tree mask; the walk from the root follows the child whose token is
the argmax, so exactly the tokens greedy decoding would choose are accepted, plus
one bonus token; the cache keeps only the accepted path.
"""
from __future__ import annotations

import time
from typing import Callable

import torch

from inkling.cache.prompt_cache import PromptCache

from .decoding import Cancelled, Decoded, advance, finish, masked, pick, stopped
from .draft_tree import EMPTY, DraftTree
from .stop_rules import StopRule

Drafter = Callable[[list[int], int], DraftTree]   # (context ids, token budget) -> tree


def accept(tree: DraftTree, logits: torch.Tensor) -> tuple[list[int], int]:
    """Walk the verified tree. logits: [1 + n, vocab] (root first).

    Returns the accepted node indices (into ``tree``) and the offset, in the forward's
    rows, of the last accepted position (whose argmax is the next token).
    """
    path, row, node = [], 0, -1
    kids = {}
    for i, p in enumerate(tree.parents):
        kids.setdefault(p, {})[tree.tokens[i]] = i
    while True:
        nxt = int(torch.argmax(logits[row]))
        child = kids.get(node, {}).get(nxt)
        if child is None:
            return path, row
        path.append(child)
        node, row = child, child + 1


def speculative_decode(cache: PromptCache, logits: torch.Tensor, stop: StopRule,
                       max_new_tokens: int, stop_ids: frozenset[int],
                       decode: Callable[[list[int]], str], drafter: Drafter,
                       context: list[int], cancelled: Callable[[], bool] = lambda: False,
                       monitor=None, meter=None, first: DraftTree | None = None,
                       first_logits: torch.Tensor | None = None) -> Decoded:
    """``logits``: [vocab] at the prompt's last position; ``context``: the ids before
    the cursor (what drafts continue); ``monitor``: the analysis state masking each
    verified position along its own path, or None; ``meter``: records how many drafted
    tokens each verification kept and what each forward cost, or None.

    ``first`` and ``first_logits`` ([len(first), vocab]): a draft tree after the prompt
    that ran in the prompt's own forward pass (``PromptCache.sync`` with a draft), its
    nodes in the cache after the prompt: it is accepted like any verified tree, so the
    tokens it yields cost no decoding forward."""
    ids: list[int] = []
    logprob, forwards = 0.0, 0
    tree = first if first is not None and first_logits is not None else EMPTY
    out = logits[None] if tree is EMPTY else torch.cat((logits[None], first_logits))
    start = len(cache.ids) - 1 - len(tree)              # the cache row of the tree's root
    while True:
        try:
            out, path, row, monitor = _verified(tree, out, monitor)
            cache.keep_new(start, [0] + [i + 1 for i in path])
        except BaseException:                       # no unverified node stays cached
            cache.truncate(start + 1)
            raise
        if meter is not None and len(tree):
            meter.record(len(path), tree.source)
        taken = _path_logprobs(tree, path, out)
        taken.append(pick(out[row]))                      # the bonus token after the path
        tok = taken[-1][0]
        monitor = advance(monitor, tok)
        for t, lp in taken:
            if t in stop_ids:
                return finish(ids, logprob, forwards, stop, decode, "end-of-text")
            ids.append(t)
            logprob += lp
            done = stopped(ids, logprob, forwards, stop, decode, max_new_tokens)
            if done is not None:
                return done
        if cancelled():
            raise Cancelled()
        tree = drafter(context + ids, max_new_tokens - len(ids))
        start = len(cache.ids)
        t0 = time.perf_counter()
        out = cache.extend_tree([tok] + tree.tokens, [-1] + [p + 1 for p in tree.parents])
        forwards += 1
        if meter is not None:
            meter.cost.record(1 + len(tree), (time.perf_counter() - t0) * 1000)


def _path_logprobs(tree: DraftTree, path: list[int], out: torch.Tensor
                   ) -> list[tuple[int, float]]:
    """(token, log-probability) of each accepted node, from the row of its parent (the
    root's is row 0). out: [1 + len(tree), vocab]."""
    if not path:
        return []
    toks = [tree.tokens[n] for n in path]
    rows = out[[tree.parents[n] + 1 for n in path]]                     # [len(path), vocab]
    lp = torch.log_softmax(rows, -1)[torch.arange(len(path)), toks]     # [len(path)]
    return list(zip(toks, lp.tolist()))


def _verified(tree: DraftTree, out: torch.Tensor, monitor):
    """(rows masked by the monitor along each node's path, accepted node indices, the row
    whose argmax comes next, the monitor state there). out: [1 + len(tree), vocab]."""
    states = node_states(monitor, tree)
    rows = [r for r, st in enumerate(states) if st is not None]
    if rows:                                             # each row masked by its path's state
        out = out.clone()
        for r in rows:
            out[r] = masked(out[r], states[r])
    path, row = accept(tree, out)
    return out, path, row, states[row]


def node_states(monitor, tree: DraftTree) -> list:
    """The monitor state after the root (row 0) and after each tree node (row i + 1)."""
    if monitor is None:
        return [None] * (len(tree) + 1)
    states = [monitor]
    for tok, parent in zip(tree.tokens, tree.parents):
        st = states[parent + 1]
        states.append(None if st is None else st.advance_token(tok))
    return states
