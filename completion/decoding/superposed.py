"""Superposed decoding: k drafts from one sequence in the cache.

Each step feeds one input, the probability-weighted sum of the k drafts' last-token
embeddings; the one next-token distribution p is interpolated with each draft's n-gram
distribution q (continuation counts after the draft's longest matches in inkling's
suffix indexes: document, workspace, accepted completions, datastore), score =
log(l * q + (1 - l) * p) where some source matches, else log p. Of the k x k
candidates the best k distinct drafts are kept.

The weight l was chosen on the 549 completions of ``benchmarks/decoders.py``
(exact_line of the first draft / exact_line_any of three, greedy 4.7 / 4.7): the
earlier score (1 - a) log p + a log(q / 2 + p / 2) with a = 0.5 gave 5.3 / 7.1,
a = 0.75 6.6 / 8.6, a = 0.9 7.6 / 9.5, and the interpolation alone with l = 0.3 gave
7.5 / 9.3, l = 0.5 8.0 / 10.6, l = 0.7 9.3 / 10.9. On this model the code around the
cursor predicts the next few tokens better than the model does, so the first draft,
ranked by the model's own log-probability afterwards, gains too. Mixing the first
token as well changed nothing (9.3 / 10.8), so it stays the model's top k.

Drafts stay coherent for about ten tokens, but on the CPU three superposed steps gave
the same drafts' quality at less cost (the k x k scoring with n-gram lookups costs
about 3 ms a step beside an 8 ms forward: latency p50 1.37 of greedy against 1.58 with
ten steps; six steps with the earlier score at a = 0.75 gave the same exact_line and
exact_line_any as three); after ``steps`` the superposed entries are dropped, the kept
drafts are run exactly as branches over the shared prompt (which also rescores them
with their true log-probabilities, so incoherent ones are filtered), and each
continues greedily as a branch.

Greedy's own draft is one more branch, and the lead (``_greedy_path``: its top first
token, continued exactly). On the model card's 462 held-out standard-library lines,
completed from the start of their indentation, the three mixed drafts alone gave the
first draft 7.1% and one of three 8.0% against greedy's 8.7% (run-8 weights): of the 17
lines greedy had right and the first draft wrong, greedy's line was among the drafts in
2; the mixed steps steer all three off the model's best line (a neighbouring keyword
argument, ``try:`` for ``else:``). With greedy's branch and the two best mixed ones:
9.3% and 11.0% (``inkling evaluate --drafts 3``; on the held-out package 4.3% and 7.4%
against 4.5% and 7.2%); mid-line (``benchmarks/decoders.py``) 10.2% and 14.2% against
11.7% and 14.4%, as greedy's draft now often ranks first. Greedy's branch with all three
mixed ones (a fourth row a step) gave the same at the line starts but 3.8% / 7.2% on the
package, for p50 2.83 times greedy's against 2.58.
"""
from __future__ import annotations

import math
from dataclasses import replace

import torch

from inkling.completion.drafting.suffix_index import next_counts
from inkling.completion.decoding.branches import (Branch, advance_branches, check_branch,
                                                  first_tokens, sample_alternatives)
from inkling.completion.decoding.request import DecodeRequest
from inkling.completion.decoding.seams import Monitor
from inkling.completion.decoding.steps import Cancelled, Decoded, advance, finish, masked

SUPERPOSED_STEPS = 3         # measured against 6 and 10: see the module's note
NGRAM_MIX = 0.7             # l in l * q + (1 - l) * p: measured, see the module's note
INCOHERENT_NATS = 2.5       # drop drafts this far below the best per-token log-probability


def ngram_logprobs(sources: dict, context: list[int], p: torch.Tensor,
                   mix: float = NGRAM_MIX) -> torch.Tensor:
    """log(mix * q + (1 - mix) * p) [vocab] for the model's p [vocab]: q the next-token
    counts after the context's longest matches in the ``sources``; log p where no
    source has a match."""
    counts: dict[int, int] = {}
    for index in sources.values():
        lookup = getattr(index, "ngram_found", index.found)
        for tok, n in next_counts(lookup(context)).items():
            counts[tok] = counts.get(tok, 0) + n
    if not counts:
        return torch.log(p.clamp_min(1e-12))
    q = torch.zeros_like(p)                                              # [vocab]
    n = torch.tensor(list(counts.values()), dtype=p.dtype)
    q[torch.tensor(list(counts))] = n / n.sum()
    return torch.log((mix * q + (1 - mix) * p).clamp_min(1e-12))


def _step_candidates(drafts, p: torch.Tensor, sources: dict, context: list[int], k: int):
    """The best k (ids, score, monitor) extensions of the live drafts (ids, score,
    monitor); p: [vocab], the superposed step's next-token distribution."""
    cands = []
    for ids, score, mon in drafts:
        combined = masked(ngram_logprobs(sources, context + ids, p, NGRAM_MIX), mon)  # [vocab]
        top = torch.topk(combined, k)
        cands += [(ids + [int(t)], score + float(v), mon, int(t))
                  for v, t in zip(top.values, top.indices) if v > float("-inf")]
    cands.sort(key=lambda c: c[1], reverse=True)
    out, seen = [], set()
    for ids, score, mon, tok in cands:
        if tuple(ids) not in seen:
            seen.add(tuple(ids))
            out.append((ids, score, advance(mon, tok)))
        if len(out) == k:
            break
    return out


def superposed_decode(r: DecodeRequest, steps: int = SUPERPOSED_STEPS
                      ) -> tuple[list[Decoded], int]:
    """``r.k`` drafts: ``steps`` superposed steps scored with ``r.sources``' n-gram counts
    after ``r.context`` (the ids before the cursor), then each draft continued exactly
    as a branch (no drafting). Returns the drafts and the forward passes they took."""
    cache, k = r.cache, r.k
    emb = cache.runtime.input_embeddings()
    shared = len(cache.ids)
    firsts = first_tokens(masked(r.logits, r.monitor), k)        # [(token, logprob)], best first
    live = [([t], lp, advance(r.monitor, t)) for t, lp in firsts]
    done: list[tuple[list[int], str, Monitor | None]] = []
    forwards = 0
    for _ in range(steps):
        live = _settle(r, live, done)
        if not live:
            break
        if r.cancelled():
            raise Cancelled()
        w = torch.softmax(torch.tensor([s for _, s, _ in live]), -1)            # [k]
        rows = emb.weight[torch.tensor([ids[-1] for ids, _, _ in live],
                                       device=emb.weight.device)]             # [k, hidden]
        mixed = (w[:, None].to(rows.device, rows.dtype) * rows).sum(0, keepdim=True)  # [1, h]
        # [vocab], on the CPU with the n-gram counts it is mixed with (CUDA's included)
        p = torch.softmax(cache.extend_embeds(mixed)[-1], -1).cpu()
        forwards += 1
        live = _step_candidates(live, p, r.sources, r.context, k)
    cache.truncate(shared)                                   # drop the superposed entries
    going, ended = _greedy_path(r, firsts[:1], live, done)
    branches = _exact_branches(r, shared, live + going, done + ended)
    forwards += 1
    lead = [branches.pop(len(live) if going else -1)] if going or ended else []
    branches = lead + _coherent(branches)[:k - len(lead)]   # mixed ones among themselves
    sample_alternatives(r, branches)
    forwards += advance_branches(replace(r, drafter=None), shared, branches)
    cache.truncate(shared)              # the prompt, as every multi-draft decoder leaves it
    return [b.done for b in branches], forwards


def _greedy_path(r: DecodeRequest, top: list, live: list, done: list) -> tuple[list, list]:
    """Greedy's own draft as one more branch, the lead: its top first token, which the
    branches continue exactly as greedy does (the mixed steps can steer all k drafts
    off the model's best line: a neighbouring keyword argument, ``try:`` for ``else:``),
    unless a draft is that token alone already (``top``: [(token, logprob)], the masked
    prompt logits' best, or [] where none is sensible). Returns what to add to ``live`` and to
    ``done``: ([(ids, score, monitor)], []), or ([], [(ids, why, monitor)]) where it ends
    at once, or ([], [])."""
    if not top or any(ids == [top[0][0]] for ids, *_ in live + done):
        return [], []
    tok, lp = top[0]
    ended: list = []
    return _settle(r, [([tok], lp, advance(r.monitor, tok))], ended), ended


def _settle(r: DecodeRequest, live: list, done: list) -> list:
    """Move drafts that ended (end of text, a stop rule, the budget) to ``done``; the
    others, still live."""
    keep = []
    for ids, score, mon in live:
        text = r.decode([t for t in ids if t not in r.stop_ids])
        if ids[-1] in r.stop_ids:
            done.append((ids[:-1], "end-of-text", mon))
        elif r.stop.cut(text) is not None or len(ids) >= r.budget:
            done.append((ids, "stop-rule", mon))
        else:
            keep.append((ids, score, mon))
    return keep


def _exact_branches(r: DecodeRequest, shared: int, live: list, done: list) -> list[Branch]:
    """Run every draft's tokens but the last as disjoint paths over the prompt (its
    ``shared`` cache entries) in one forward pass, scoring each draft with its true
    log-probabilities (the first token's from ``r.logits``, [vocab])."""
    cache = r.cache
    drafts = [(ids, None, mon) for ids, _, mon in live] + list(done)
    tokens, positions, visible, owner = [], [], [], []
    start = len(cache.ids)
    for d, (ids, _, _) in enumerate(drafts):
        path = []
        for j, tok in enumerate(ids[:-1]):
            path.append(start + len(tokens))
            tokens.append(tok)
            positions.append(shared + j)
            visible.append(list(path))
            owner.append(d)
    out = cache.extend_masked(tokens, positions, visible, shared) if tokens else None
    logp0 = torch.log_softmax(r.logits.float(), -1)                         # [vocab]
    branches = []
    for d, (ids, why, mon) in enumerate(drafts):
        rows = [i for i, o in enumerate(owner) if o == d]
        lps = [float(logp0[ids[0]])] if ids else []
        lps += [float(torch.log_softmax(out[row], -1)[tok]) for row, tok in zip(rows, ids[1:])]
        lp = sum(lps, 0.0)
        b = Branch(list(ids), lp, [start + row for row in rows], monitor=mon, lps=lps)
        if why is not None or not ids:
            b.done = finish(r, list(ids), lp, 0, why or "end-of-text")
        else:
            check_branch(r, b, 0)
        branches.append(b)
    return branches


def _coherent(branches: list[Branch]) -> list[Branch]:
    """Drop drafts far less likely per token than the best one (incoherent mixtures);
    the rest best first."""
    def per_token(b):
        return b.logprob / max(1, len(b.ids))
    if not branches:
        return branches
    best = max(per_token(b) for b in branches)
    kept = [b for b in branches if per_token(b) >= best - INCOHERENT_NATS or math.isclose(
        per_token(b), best)]
    return sorted(kept, key=per_token, reverse=True)       # the most likely one leads
