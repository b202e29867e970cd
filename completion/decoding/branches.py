"""Branch decoding: k drafts as one tree over the prompt cache, for about the cost of one.
Each branch is the greedy continuation of one of the k likeliest tokens after ``lead_in``, as
``sequential_decode`` decodes them one by one (docs/decisions/branches-decoding.md)."""
from __future__ import annotations

import time
from dataclasses import dataclass, field, replace

import torch

from inkling.completion.drafting.draft_tree import EMPTY
from inkling.completion.decoding.greedy import greedy_decode
from inkling.completion.decoding.request import DecodeRequest
from inkling.completion.decoding.seams import Monitor
from inkling.completion.decoding.speculative import (Verification, near_tie, near_tie_bound,
                                                     speculative_decode, walk)
from inkling.completion.decoding.steps import (Cancelled, Decoded, advance, finish, forced_ids,
                                               masked, pick, stopped)
from inkling.completion.decoding.stop_rules import line_count

MIN_FIRST_PROB = 1e-3     # first tokens less likely than this are not sensible drafts
MAX_TOKENS = "max-tokens"
LEAD_EXTENT = "lead-extent"   # an alternative reached the lead draft's length in tokens


@dataclass
class Branch:
    ids: list[int]
    logprob: float
    cached: list[int] = field(default_factory=list)   # cache indices of its tokens
    done: Decoded | None = None
    monitor: Monitor | None = None                     # its analysis state, or None
    lps: list[float] = field(default_factory=list)     # each token's log-probability
    temperature: float = 0.0                           # its later tokens sampled at it (0: greedy)

    def add(self, tok: int, lp: float) -> None:
        self.ids.append(tok)
        self.lps.append(lp)
        self.logprob += lp


def first_tokens(logits: torch.Tensor, k: int) -> list[tuple[int, float]]:
    """The k likeliest first tokens of ``logits`` [vocab], (token, logprob), sensible ones only."""
    logp = torch.log_softmax(logits.float(), -1)                        # [vocab]
    top = torch.topk(logp, min(k, logp.shape[-1]))
    return [(int(t), float(lp)) for lp, t in zip(top.values, top.indices)
            if lp >= torch.log(torch.tensor(MIN_FIRST_PROB))]


@dataclass
class LeadIn:
    """The tokens every branch shares (``lead_in``), cached after the prompt."""
    ids: list[int]
    lps: list[float]              # each one's log-probability
    logits: torch.Tensor          # [vocab] after them (the prompt's where there are none)
    monitor: Monitor | None       # the analysis state after them
    forwards: int

    @property
    def logprob(self) -> float:
        return sum(self.lps)


def lead_in(r: DecodeRequest) -> LeadIn:
    """Greedy's shared steps, one row a forward, while exactly one token is sensible.
    Branching there would give one draft; it stops before a draft's end or a forced name."""
    ids: list[int] = []
    lps: list[float] = []
    logits, monitor, forwards = r.logits, r.monitor, 0                 # logits: [vocab]
    while len(ids) + 1 < r.budget:
        allowed = masked(logits, monitor)
        if len(first_tokens(allowed, 2)) != 1:
            break
        tok, lp = pick(allowed)
        after = advance(monitor, tok)
        if tok in r.stop_ids or forced_ids(after, r.cache.runtime.encode) \
                or stopped(r, ids + [tok], 0.0, forwards) is not None:
            break
        if r.cancelled():
            raise Cancelled()
        logits = r.cache.extend([tok])[-1]                             # [vocab]
        ids.append(tok)
        lps.append(lp)
        monitor, forwards = after, forwards + 1
    return LeadIn(ids, lps, logits, monitor, forwards)


def check_branch(r: DecodeRequest, b: Branch, forwards: int) -> None:
    """Mark ``b`` done where ``r.stop`` ends it or at ``r.budget`` tokens."""
    text = r.decode(b.ids)
    cut = r.stop.cut(text) if not text.endswith("\ufffd") else None
    if cut is not None:
        b.done = Decoded(text[:cut], list(b.ids), b.logprob, forwards, "stop-rule")
    elif len(b.ids) >= r.budget:
        b.done = finish(r, b.ids, b.logprob, forwards, MAX_TOKENS)


def follow_lead(r: DecodeRequest, b: Branch, forwards: int) -> None:
    """Hold ``b`` to the lead-capped ``r`` as if decoded under it from the start (as sequential)."""
    if len(b.lps) != len(b.ids):            # no per-token log-probabilities: text only
        if b.done is None:
            check_branch(r, b, forwards)
        elif (cut := r.stop.cut(b.done.text, final=True)) is not None \
                and cut < len(b.done.text):
            b.done.text = b.done.text[:cut]
        return
    ids, lps, done = list(b.ids), list(b.lps), b.done
    for n in range(1, len(ids) + 1):
        b.ids, b.lps, b.logprob = ids[:n], lps[:n], sum(lps[:n])
        b.done = None
        check_branch(r, b, done.forwards if done else forwards)
        if b.done is not None:
            return
    b.done = done
    if done is not None and done.stopped_by == "end-of-text":
        b.done = finish(r, ids, done.logprob, done.forwards, "end-of-text")


def branch_decode(r: DecodeRequest) -> tuple[list[Decoded], int]:
    """``r.k`` branches decoded together from the ``lead_in``; returns them and the passes used."""
    shared = len(r.cache.ids)
    lead = lead_in(r)
    cached = list(range(shared, shared + len(lead.ids)))           # the lead-in's entries
    branches = []
    for tok, lp in first_tokens(masked(lead.logits, lead.monitor), r.k):
        b = Branch(list(lead.ids), lead.logprob, list(cached), monitor=advance(lead.monitor, tok),
                   lps=list(lead.lps))
        if tok in r.stop_ids:           # its log-probability counted, as sequential counts it
            b.done = finish(r, list(lead.ids), lead.logprob + lp, lead.forwards, "end-of-text")
        else:
            b.add(tok, lp)
            check_branch(r, b, lead.forwards)
        branches.append(b)
    sample_alternatives(r, branches)
    forwards = advance_branches(r, shared, branches, lead.forwards)
    r.cache.truncate(shared)            # the prompt, as every multi-draft decoder leaves it
    return [b.done for b in branches], forwards


def sample_alternatives(r: DecodeRequest, branches: list[Branch]) -> None:
    """Every branch but the lead samples its later tokens at ``r.temperature``."""
    for b in branches[1:]:
        b.temperature = r.temperature


def advance_branches(r: DecodeRequest, shared: int, branches: list[Branch], forwards: int = 0
                     ) -> int:
    """Step every live branch, one forward pass a step, until all are done; returns the passes.
    Once the lead is done the others end within its lines and tokens (not under ``r.floor``)."""
    led, max_new_tokens = False, r.budget
    while True:
        if not led and branches and branches[0].done is not None:
            r = replace(r, stop=r.stop.capped(line_count(branches[0].done.text)),
                        budget=lead_budget(branches[0].done, max_new_tokens, r.floor))
            led = True
            for b in branches[1:]:
                follow_lead(r, b, forwards)
        live = [b for b in branches if b.done is None]
        if not live:
            break
        if r.cancelled():
            raise Cancelled()
        began, before = time.perf_counter(), sum(len(b.ids) for b in live)
        steps, search = _step_forward(r, shared, live)
        forwards += 1
        for b, step in zip(live, steps):
            forwards += _take(r, shared, b, step, forwards)
        if r.meter is not None and r.drafter is not None:   # as speculative's steps
            measure_step(r.meter, steps, began, search,
                         sum(len(b.ids) for b in live) - before)
    extent = lead_budget(branches[0].done, max_new_tokens) if branches else 0
    for i, b in enumerate(branches):
        if len(b.lps) >= len(b.done.token_ids):
            b.done.lps = b.lps[:len(b.done.token_ids)]
        if i:
            cut_to_lead(b.done, r.budget, max_new_tokens)
            past_lead(b.done, b.lps, extent)
    return forwards


def past_lead(alternative: Decoded, lps: list[float], extent: int) -> None:
    """Rank an alternative run past the lead's ``extent`` tokens by its first ``extent`` ones."""
    if len(alternative.token_ids) > extent and len(lps) >= extent > 0:
        alternative.score = sum(lps[:extent]) / extent


def measure_step(meter, steps: list[Verification], began: float, search: float | None,
                 taken: int) -> None:
    """Record a drafting branches step in ``meter`` as ``speculative_decode`` records its own."""
    ms = (time.perf_counter() - began) * 1000 - (search or 0.0)
    rows = sum(len(step.chain) + len(step.tree) for step in steps)
    meter.cost.record(rows, ms, max(1, taken), search)


def _step_forward(r: DecodeRequest, shared: int, live: list[Branch]
                  ) -> tuple[list[Verification], float | None]:
    """One forward for every live branch (token, forced name, draft tree); parts and search ms."""
    cache = r.cache
    start = len(cache.ids)
    tokens, positions, visible, rows = [], [], [], []
    chains = [[b.ids[-1]] + forced_ids(b.monitor, cache.runtime.encode)[
        :r.budget - len(b.ids)] for b in live]
    trees, search = [], None
    plain = r.drafter is None or (r.meter is not None and r.meter.plain_step())
    for b, chain in zip(live, chains):
        if plain or b.temperature:                      # none for a sampled branch
            trees.append(EMPTY)
            continue
        trees.append(r.drafter(list(r.context) + b.ids + chain[1:],
                               r.budget - len(b.ids) - len(chain) + 1))
        spent = getattr(r.drafter, "last_search_ms", None)
        if spent is not None:
            search = (search or 0.0) + spent
    for b, chain, tree in zip(live, chains, trees):
        base, at, c = len(tokens), shared + len(b.ids) - 1, len(chain)
        for j, tok in enumerate(chain):
            tokens.append(tok)
            positions.append(at + j)
            visible.append(b.cached + [start + base + i for i in range(j + 1)])
        for i, (tok, parent, depth) in enumerate(zip(tree.tokens, tree.parents, tree.depths())):
            tokens.append(tok)
            positions.append(at + c - 1 + depth)
            visible.append(visible[base + c + parent] + [start + base + c + i])
        rows.append(base)
    out = cache.extend_masked(tokens, positions, visible, shared)   # [len(tokens), vocab]
    return [Verification(chain, tree, out[base:base + len(chain) + len(tree)], start + base,
                         (len(chain), False))
            for chain, tree, base in zip(chains, trees, rows)], search


def lead_budget(lead: Decoded, max_new_tokens: int, floor: int = 0) -> int:
    """The alternatives' budget once the lead is done: its steps, at least ``floor`` (if any)."""
    if not lead.token_ids:
        return max_new_tokens
    took = len(lead.token_ids) + (lead.stopped_by == "end-of-text")
    return min(max_new_tokens, max(floor, took))


def cut_to_lead(alternative: Decoded, budget: int, max_new_tokens: int) -> None:
    """An alternative out of the lead's smaller budget ends at its last whole word."""
    if alternative.stopped_by == MAX_TOKENS and budget < max_new_tokens:
        alternative.text, alternative.stopped_by = at_word_end(alternative.text), LEAD_EXTENT


def at_word_end(text: str) -> str:
    """``text`` less a trailing identifier that may be cut short (whole when it is one word)."""
    end = len(text)
    while end and (text[end - 1].isalnum() or text[end - 1] == "_"):
        end -= 1
    return text if not text[:end].strip() else text[:end].rstrip()


def _take(r: DecodeRequest, shared: int, b: Branch, step: Verification, forwards: int
          ) -> bool:
    """Advance ``b`` by ``step.chain`` and what greedy keeps of ``step.tree``.
    Returns whether a near-tie row was re-decided alone (``speculative.NEAR_TIE``)."""
    chain, tree, root_entry = step.chain, step.tree, step.start
    c = len(chain)
    b.cached.append(root_entry)
    for i, tok in enumerate(chain[1:]):               # the forced name, as greedy takes it
        b.add(tok, float(torch.log_softmax(step.out[i], -1)[tok]))
        b.cached.append(root_entry + 1 + i)
        b.monitor = advance(b.monitor, tok)
        check_branch(r, b, forwards)
        if b.done is not None:
            return False
    w = walk(tree, step.out[c - 1:], b.monitor)      # rows masked by their path's state
    if r.meter is not None and len(tree):            # what the tree kept, as speculative's
        r.meter.record(len(w.path), tree.source)
    path = w.path[:w.forced_at()]
    tie = None if b.temperature else near_tie(w.rows[:len(path) + 1], None,
                                              near_tie_bound(r.cache.runtime.dtype))
    for j, node in enumerate(path[:tie]):
        tok = tree.tokens[node]
        if tok in r.stop_ids:
            b.done = finish(r, b.ids, b.logprob, forwards, "end-of-text")
            return False
        b.add(tok, float(torch.log_softmax(w.rows[j], -1)[tok]))   # its parent's row
        b.cached.append(root_entry + c + node)
        check_branch(r, b, forwards)
        if b.done is not None:
            return False
    path = path[:tie]
    b.monitor = w.states[len(path)]
    nxt = w.rows[len(path)]                           # [vocab]
    if tie is not None:                               # in greedy's own shape
        alone = r.cache.gathered(list(range(shared)) + b.cached)
        nxt = masked(alone.rerun(*(step.ref if tie == 0 else (1, True))), b.monitor)
    tok = next_token(nxt, b.temperature, r.generator)
    b.monitor = advance(b.monitor, tok)
    if tok in r.stop_ids:
        b.done = finish(r, b.ids, b.logprob, forwards, "end-of-text")
        return tie is not None
    b.add(tok, float(torch.log_softmax(nxt, -1)[tok]))
    check_branch(r, b, forwards)
    return tie is not None


def next_token(logits: torch.Tensor, temperature: float, generator: torch.Generator) -> int:
    """The argmax of ``logits`` [vocab] at temperature 0 (or when all are masked), else a sample."""
    if not temperature or not bool(torch.isfinite(logits).any()):
        return int(torch.argmax(logits))
    probs = torch.softmax(logits.float() / temperature, -1)                   # [vocab]
    return int(torch.multinomial(probs, 1, generator=generator))


def sequential_decode(r: DecodeRequest) -> tuple[list[Decoded], int]:
    """The same branches one after another, each greedy (or speculative) from its first token."""
    shared = len(r.cache.ids)
    lead = lead_in(r)
    base, n = len(r.cache.ids), len(lead.ids)
    results, forwards, max_new_tokens = [], lead.forwards, r.budget
    extent = max_new_tokens                       # the lead's tokens, once it is decoded
    alone = replace(r, context=list(r.context) + lead.ids, first=None, first_logits=None,
                    first_rows=1, monitor=lead.monitor, budget=r.budget - n,
                    decode=lambda ids: r.decode(lead.ids + ids))   # one branch on its own
    for tok, lp in first_tokens(masked(lead.logits, lead.monitor), r.k):
        r.cache.truncate(base)
        forced = torch.full_like(r.logits, float("-inf"))               # [vocab]
        forced[tok] = 0.0                                 # this branch's first token
        alone = replace(alone, logits=forced,
                        meter=None if results else r.meter)   # the lead's steps are greedy's
        out = greedy_decode(alone) if r.drafter is None else speculative_decode(alone)
        out.token_ids = lead.ids + out.token_ids
        out.logprob += lead.logprob + lp
        out.lps = lead.lps + ([lp] + out.lps[1:] if out.lps else [])   # the forced one's
        forwards += out.forwards
        if results:
            cut_to_lead(out, alone.budget + n, max_new_tokens)
            past_lead(out, out.lps, extent)
        results.append(out)
        if len(results) == 1:                 # the others follow the lead's extent
            alone = replace(alone, stop=alone.stop.capped(line_count(out.text)),
                            budget=lead_budget(out, max_new_tokens, r.floor) - n)
            extent = lead_budget(out, max_new_tokens)
    r.cache.truncate(shared)            # the prompt, as every multi-draft decoder leaves it
    return results, forwards
