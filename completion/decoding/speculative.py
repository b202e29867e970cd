"""Greedy decoding with draft trees verified in one forward pass, lossless against greedy.
The walk keeps only greedy's argmax path; a row whose top two logits are nearer than ``NEAR_TIE``
is re-decided in greedy's own shape (docs/decisions/lossless-drafting.md)."""
from __future__ import annotations

import time
from dataclasses import dataclass

import torch

from inkling.cache.prompt_cache import PromptCache

from inkling.completion.drafting.draft_tree import EMPTY, DraftTree
from inkling.completion.decoding.request import DecodeRequest
from inkling.completion.decoding.seams import Meter, Monitor
from inkling.completion.decoding.steps import (Cancelled, Decoded, advance, finish, forced_ids,
                                               masked, pick, settled, stopped)

# top-2 logit margin under which a drafted row is re-decided, by dtype: float32's sized to its
# measured noise (docs/decisions/lossless-drafting.md), half precision's unmeasured guesses
NEAR_TIE = {torch.float32: 1e-3, torch.float64: 1e-3, torch.float16: 0.05,
            torch.bfloat16: 0.25}


def accept(tree: DraftTree, logits: torch.Tensor) -> tuple[list[int], int]:
    """Walk the verified tree (logits [1 + n, vocab]): accepted nodes, last accepted row."""
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


@dataclass
class Verification:
    """A verification forward: ``chain`` (token, forced name), then ``tree`` after its last."""
    chain: list[int]
    tree: DraftTree
    out: torch.Tensor          # [len(chain) + len(tree), vocab]
    start: int                 # the cache index of the chain's first token
    ref: tuple[int, bool]      # (rows, last_only): greedy's forward of the chain's last row
    states: list | None = None  # monitor state per row from the chain's last, or None


def speculative_decode(r: DecodeRequest) -> Decoded:
    """Greedy decoding of ``r`` with ``r.drafter``'s trees verified along the way.
    A tree ``r.first`` run with the prompt (rows ``r.first_logits``) is walked as any other."""
    cache, monitor, meter, budget = r.cache, r.monitor, r.meter, r.budget
    ids: list[int] = []
    lps: list[float] = []                                    # each token's log-probability
    logprob, forwards = 0.0, 0
    tree = r.first if r.first is not None and r.first_logits is not None else EMPTY
    out = r.logits[None] if tree is EMPTY else torch.cat((r.logits[None], r.first_logits))
    at = len(cache.ids) - 1 - len(tree)                 # the cache row of the prompt's last
    step = Verification([cache.ids[at]], tree, out, at, (r.first_rows, True))
    prompt, bound, encode = at + 1, near_tie_bound(cache.runtime.dtype), cache.runtime.encode
    began, rows, search = None, 0, None  # the timed step: start, rows, search ms (or None)
    while True:
        try:
            taken, monitor, reran = _accepted(cache, step, monitor, meter, bound)
        except BaseException:                       # no unverified node stays cached
            cache.truncate(step.start + 1)
            raise
        tok = taken[-1][0]
        monitor, forwards = advance(monitor, tok), forwards + reran
        for t, lp in taken:
            if t in r.stop_ids:
                return settled(cache, prompt, finish(r, ids, logprob, forwards, "end-of-text"),
                               lps)
            ids.append(t)
            lps.append(lp)
            logprob += lp
            done = stopped(r, ids, logprob, forwards)
            if done is not None:
                return settled(cache, prompt, done, lps)
        if r.cancelled():
            raise Cancelled()
        chain = [tok] + forced_ids(monitor, encode)[:budget - len(ids)]
        if meter is not None and began is not None:     # the whole step but the search
            meter.cost.record(rows, (time.perf_counter() - began) * 1000, len(taken), search)
        tree = r.drafter(r.context + ids + chain[1:], budget - len(ids) - len(chain) + 1)
        began, search = time.perf_counter(), getattr(r.drafter, "last_search_ms", None)
        tree, states = allowed_tree(tree, monitor, chain[1:])
        rows = len(chain) + len(tree)
        step, forwards = _verified(cache, chain, tree, states), forwards + 1


def _verified(cache: PromptCache, chain: list[int], tree: DraftTree, states: list | None
              ) -> Verification:
    """The forward of ``chain`` then ``tree`` after it (without a tree, greedy's own forward)."""
    start, c = len(cache.ids), len(chain)
    if tree.tokens:
        parents = list(range(-1, c - 1)) + [c - 1 if p < 0 else c + p for p in tree.parents]
        out = cache.extend_tree(chain + tree.tokens, parents)       # [c + len(tree), vocab]
    else:
        out = cache.extend(chain)                                           # [c, vocab]
    return Verification(chain, tree, out, start, (c, False), states)


def near_tie_bound(dtype: torch.dtype) -> float:
    """The top-2 logit margin under which a drafted row of ``dtype`` is re-decided."""
    return NEAR_TIE.get(dtype, NEAR_TIE[torch.bfloat16])


def _accepted(cache: PromptCache, step: Verification, monitor: Monitor | None,
              meter: Meter | None, bound: float
              ) -> tuple[list[tuple[int, float]], Monitor | None, bool]:
    """Take the step's chain and walked tree, keeping them in the cache.
    Returns the (token, logprob) pairs, the state before the last and whether a near-tie row (under
    ``bound``) was re-decided."""
    c, tree, out = len(step.chain), step.tree, step.out
    taken = []
    for i, t in enumerate(step.chain[1:]):          # as greedy decoding takes them
        taken.append((t, float(torch.log_softmax(out[i], -1)[t])))
        monitor = advance(monitor, t)
    if not len(tree):                  # a plain step (no draft): greedy decoding's own
        return taken + [pick(masked(out[c - 1], monitor))], monitor, False
    w = walk(tree, out[c - 1:], monitor, step.states)
    if meter is not None:
        meter.record(len(w.path), tree.source)
    path = w.path[:w.forced_at()]
    tie = near_tie(w.rows[:len(path) + 1], None, bound)
    if tie is not None:
        path = path[:tie]
    cache.keep_new(step.start, list(range(c)) + [c + i for i in path])
    n = len(path)
    nxt = w.rows[n]                                                     # [vocab]
    if tie is not None:
        rows, last_only = step.ref if tie == 0 else (1, True)
        nxt = masked(cache.rerun(rows, last_only), w.states[n])             # [vocab]
    return taken + w.logprobs(tree, n) + [pick(nxt)], w.states[n], tie is not None


@dataclass
class Walk:
    """A verified tree's walk: ``path``, masked ``rows`` [len(path) + 1, vocab], ``states``."""
    path: list[int]
    rows: torch.Tensor
    states: list

    def forced_at(self) -> int:
        """How much of ``path`` precedes the first node after which the monitor forces a name."""
        for j in range(len(self.path)):
            st = self.states[j + 1]
            if st is not None and st.forced_text():
                return j
        return len(self.path)

    def logprobs(self, tree: DraftTree, n: int) -> list[tuple[int, float]]:
        """(token, log-probability) of the first ``n`` accepted nodes, each from its parent row."""
        if n == 0:
            return []
        toks = [tree.tokens[node] for node in self.path[:n]]
        lp = torch.log_softmax(self.rows[:n], -1)[torch.arange(n), toks]    # [n]
        return list(zip(toks, lp.tolist()))


def walk(tree: DraftTree, out: torch.Tensor, root, states: list | None = None) -> Walk:
    """Walk ``tree`` (out: [1 + n, vocab], root first) as greedy would, rows masked on the way."""
    kids: dict[int, dict[int, int]] = {}
    for i, p in enumerate(tree.parents):
        kids.setdefault(p, {})[tree.tokens[i]] = i
    path, rows, walked = [], [], [root]
    node, row = -1, 0
    while True:
        logits = masked(out[row], walked[-1])                               # [vocab]
        rows.append(logits)
        child = kids.get(node, {}).get(int(torch.argmax(logits))) if kids else None
        if child is None:
            return Walk(path, torch.stack(rows), walked)
        path.append(child)
        node, row = child, child + 1
        walked.append(states[row] if states is not None else
                      advance(walked[-1], tree.tokens[child]))


def near_tie(out: torch.Tensor, rows: list[int] | None, bound: float) -> int | None:
    """The first of ``rows`` (None: all) of ``out`` [n, vocab] with top-2 margin under ``bound``."""
    top = torch.topk(out if rows is None else out[rows], 2, dim=-1).values   # [rows, 2]
    close = (top[:, 0] - top[:, 1]) < bound
    return int(close.nonzero()[0, 0]) if bool(close.any()) else None


def allowed_tree(tree: DraftTree, monitor, fed: list[int]) -> tuple[DraftTree, list | None]:
    """``tree`` less the nodes the monitor masks where they come, and their subtrees.
    No accepted path could hold them; also returns each kept row's state (None: no monitor)."""
    if monitor is None or not len(tree):
        return tree, None
    root = monitor
    for t in fed:
        root = advance(root, t)
    states: list = []                        # per node: its state (None: unconstrained)
    dropped: set[int] = set()                # nodes masked, or under a masked one
    kept: list = [root]                      # per kept row: its state
    tokens, parents, new_index = [], [], {}
    for i, (tok, p) in enumerate(zip(tree.tokens, tree.parents)):
        before = root if p < 0 else states[p]
        mask = before.mask() if before is not None and p not in dropped else None
        if p in dropped or (mask is not None and tok < len(mask) and not mask[tok]):
            dropped.add(i)
            states.append(None)
            continue
        new_index[i] = len(tokens)
        tokens.append(tok)
        parents.append(-1 if p < 0 else new_index[p])
        states.append(advance(before, tok))
        kept.append(states[-1])
    if len(tokens) == len(tree):
        return tree, kept
    return DraftTree(tokens, parents, tree.score, tree.source, tree.match), kept
