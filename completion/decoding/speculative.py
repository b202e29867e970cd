"""Greedy decoding with draft trees verified in one forward pass (lossless for greedy).

Each step: the root is the token the model just chose (not yet in the cache); a
drafter proposes a tree after it; the root and the tree run through the model in one
forward with a tree mask; the walk from the root follows the child whose token is
the argmax, so exactly the tokens greedy decoding would choose are accepted, plus
one bonus token; the cache keeps only the accepted path.

Near-ties. A row of a tree's forward is the same arithmetic as the one-row forward
greedy decoding runs, but not the same float32 sums: the matrix products and the
attention of several rows take other kernels and other orders of summation, so a
logit moves by up to about 2e-5 on the bundled model (``benchmarks/lossless.py
--noise``). Where the top two logits of a walked row are closer than ``NEAR_TIE`` that
could change the argmax, so the row is re-decided in greedy's own shape
(``PromptCache.rerun``: the row's token run again alone, or the prompt's new tokens
without the draft for the prompt's last position) and the walk ends there. It is rare
(0.07% of the decided tokens of 1,178 replayed completions), so it costs little, and
it makes drafting choose what greedy chooses.
"""
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

# the top-2 logit margin under which a drafted row is re-decided in greedy's shape, by
# dtype. float32, measured on the CPU (benchmarks/README.md, "Lossless drafting"): a
# tree's row against greedy's one-row forward over the same cache differs by at most
# 2.1e-5 in a logit and 1.1e-5 in its top-2 margin (41,270 rows), 2.1e-5 between whole
# replays; 1e-3 is 50 to 90 times that. The half-precision bounds are guesses, not
# measured (no GPU was lent): their rounding is 2^13 to 2^16 times coarser; measure
# them with benchmarks/lossless.py --noise on the device
NEAR_TIE = {torch.float32: 1e-3, torch.float64: 1e-3, torch.float16: 0.05,
            torch.bfloat16: 0.25}


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


@dataclass
class Verification:
    """A verification forward: ``chain`` fed one after another (the token chosen last,
    then the rest of a name the monitor forces, as greedy decoding feeds them; for the
    prompt's forward, its last token), then ``tree`` after the chain's last token."""
    chain: list[int]
    tree: DraftTree
    out: torch.Tensor          # [len(chain) + len(tree), vocab]
    start: int                 # the cache index of the chain's first token
    ref: tuple[int, bool]      # (rows, last_only): the plain forward that computes the
                               # chain's last row in greedy's own shape
    states: list | None = None  # the monitor state at each row from the chain's last
                                # (``allowed_tree``), when known before the forward


def speculative_decode(r: DecodeRequest) -> Decoded:
    """Greedy decoding of ``r`` with ``r.drafter``'s trees verified along the way.

    ``r.logits``: [vocab] at the prompt's last position; ``r.context``: the ids before
    the cursor (what drafts continue); ``r.monitor``: the analysis state masking each
    verified position along its own path, or None; ``r.meter``: records how many drafted
    tokens each verification kept and what each step cost (from the drafter's answer to
    the next drafter call: masks, forward, walk), or None.

    ``r.first`` and ``r.first_logits`` ([len(first), vocab]): a draft tree after the
    prompt that ran in the prompt's own forward pass (``PromptCache.sync`` with a draft),
    its nodes in the cache after the prompt: it is accepted like any verified tree, so
    the tokens it yields cost no decoding forward. ``r.first_rows``: how many of the
    prompt's tokens that forward ran (``SyncResult.prefilled``), which a near-tie at the
    prompt's last position re-runs without the draft (see ``NEAR_TIE``).

    As in ``greedy_decode``, where the monitor allows only one name the rest of it is
    taken as the tokenizer writes it, fed with the chosen token (the walk of a tree ends
    at a node after which a name is forced)."""
    cache, monitor, meter, budget = r.cache, r.monitor, r.meter, r.budget
    ids: list[int] = []
    lps: list[float] = []                                    # each token's log-probability
    logprob, forwards = 0.0, 0
    tree = r.first if r.first is not None and r.first_logits is not None else EMPTY
    out = r.logits[None] if tree is EMPTY else torch.cat((r.logits[None], r.first_logits))
    at = len(cache.ids) - 1 - len(tree)                 # the cache row of the prompt's last
    step = Verification([cache.ids[at]], tree, out, at, (r.first_rows, True))
    prompt, bound, encode = at + 1, near_tie_bound(cache.runtime.dtype), cache.runtime.encode
    began, rows, search = None, 0, None  # the step being timed: its start, forward's rows,
                                         # the drafter's search before it (ms, None: none)
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
    """The verification forward of ``chain`` then ``tree`` after the chain's last token
    (with no draft, the forward greedy decoding runs)."""
    start, c = len(cache.ids), len(chain)
    if tree.tokens:
        parents = list(range(-1, c - 1)) + [c - 1 if p < 0 else c + p for p in tree.parents]
        out = cache.extend_tree(chain + tree.tokens, parents)       # [c + len(tree), vocab]
    else:
        out = cache.extend(chain)                                           # [c, vocab]
    return Verification(chain, tree, out, start, (c, False), states)


def near_tie_bound(dtype: torch.dtype) -> float:
    """The top-2 logit margin under which a drafted row is re-decided (``NEAR_TIE``)."""
    return NEAR_TIE.get(dtype, NEAR_TIE[torch.bfloat16])


def _accepted(cache: PromptCache, step: Verification, monitor: Monitor | None,
              meter: Meter | None, bound: float
              ) -> tuple[list[tuple[int, float]], Monitor | None, bool]:
    """Take the step's forced chain, walk its verified tree and keep what was taken in
    the cache; returns the (token, log-probability) pairs taken (the chain's forced
    tokens, the accepted path, then the next token), the monitor state before that
    next token and whether a forward re-decided a row. ``monitor``: the state after the
    chain's first token.

    A walked row of a drafted forward whose top two logits are closer than ``bound`` is
    re-decided in the shape greedy decoding computes it (``PromptCache.rerun``: one row,
    or ``step.ref`` for the chain's last), and the walk ends there."""
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
    """The walk of a verified tree from its root: ``path`` the accepted node indices,
    ``rows`` [len(path) + 1, vocab] the logits of each walked row as the monitor masks
    them (the root's first), ``states`` the monitor state at each walked row."""
    path: list[int]
    rows: torch.Tensor
    states: list

    def forced_at(self) -> int:
        """How much of ``path`` comes before the first node after which the monitor
        forces a name (that node's token is then the next token, and the name is fed
        after it)."""
        for j in range(len(self.path)):
            st = self.states[j + 1]
            if st is not None and st.forced_text():
                return j
        return len(self.path)

    def logprobs(self, tree: DraftTree, n: int) -> list[tuple[int, float]]:
        """(token, log-probability) of the first ``n`` accepted nodes, each from the row
        of its parent (the walked row before it)."""
        if n == 0:
            return []
        toks = [tree.tokens[node] for node in self.path[:n]]
        lp = torch.log_softmax(self.rows[:n], -1)[torch.arange(n), toks]    # [n]
        return list(zip(toks, lp.tolist()))


def walk(tree: DraftTree, out: torch.Tensor, root, states: list | None = None) -> Walk:
    """Walk the verified ``tree`` (out: [1 + n, vocab], root first) the way greedy decoding
    would go: from each walked row, masked by its monitor state, to the child whose token
    is the row's argmax. Only walked rows are masked, and only their states advanced
    (``states``, one per row, when the caller has them; else from ``root`` along the way)."""
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
    """The index in ``rows`` of the first row of ``out`` ([n, vocab]) whose top two logits
    are closer than ``bound``, or None; ``rows`` None: every row of ``out`` (no gather)."""
    top = torch.topk(out if rows is None else out[rows], 2, dim=-1).values   # [rows, 2]
    close = (top[:, 0] - top[:, 1]) < bound
    return int(close.nonzero()[0, 0]) if bool(close.any()) else None


def allowed_tree(tree: DraftTree, monitor, fed: list[int]) -> tuple[DraftTree, list | None]:
    """``tree`` less each node whose token the monitor masks where it comes (and the
    nodes under it): no accepted path can hold one, since every row is masked by its
    path's state, so it would only cost a row of the forward. ``monitor``: the state
    before ``fed``, the tokens between it and the tree's root. Also returns the monitor
    state at each row of the kept tree (the root's first), or None without a monitor.
    A state may hand over to None on the way (token healing or the blank-line rule done,
    no analysis monitor under it): from there nothing is masked."""
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
