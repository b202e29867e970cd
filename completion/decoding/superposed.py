"""Superposed decoding: k drafts from one sequence in the cache, mixed with n-gram counts.
A step feeds the drafts' weighted last embeddings, scoring log(l * q + (1 - l) * p); then the
drafts run exactly as branches, greedy's own first (docs/decisions/superposed-decoding.md)."""
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

SUPERPOSED_STEPS = 3         # measured: docs/decisions/superposed-decoding.md
NGRAM_MIX = 0.7             # l in l * q + (1 - l) * p, measured as the steps are
INCOHERENT_NATS = 2.5       # drop drafts this far below the best per-token log-probability


def ngram_logprobs(sources: dict, context: list[int], p: torch.Tensor,
                   mix: float = NGRAM_MIX) -> torch.Tensor:
    """log(mix * q + (1 - mix) * p) [vocab], q: the ``sources``' counts after ``context``."""
    counts: dict[int, int] = {}
    for index in sources.values():
        lookup = getattr(index, "ngram_found", index.found)
        for tok, n in next_counts(lookup(context)).items():
            counts[tok] = counts.get(tok, 0) + n
    if not counts:                                         # no source matches: log p
        return torch.log(p.clamp_min(1e-12))
    q = torch.zeros_like(p)                                              # [vocab]
    n = torch.tensor(list(counts.values()), dtype=p.dtype)
    q[torch.tensor(list(counts))] = n / n.sum()
    return torch.log((mix * q + (1 - mix) * p).clamp_min(1e-12))


def _step_candidates(drafts, p: torch.Tensor, sources: dict, context: list[int], k: int):
    """The best k distinct (ids, score, monitor) extensions of the live drafts; p: [vocab]."""
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
    """``r.k`` drafts: ``steps`` mixed steps, then each continued exactly as a branch.
    Returns the drafts and the forward passes taken."""
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
        rows = emb(torch.tensor([ids[-1] for ids, _, _ in live],
                                device=cache.runtime.device))                 # [k, hidden]
        mixed = (w[:, None].to(rows.device, rows.dtype) * rows).sum(0, keepdim=True)  # [1, h]
        p = torch.softmax(cache.extend_embeds(mixed)[-1], -1).cpu()   # [vocab], as q is
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
    """Greedy's draft, the lead: what to add to ``live`` and ``done`` (nothing if it is there)."""
    if not top or any(ids == [top[0][0]] for ids, *_ in live + done):
        return [], []
    tok, lp = top[0]
    ended: list = []
    return _settle(r, [([tok], lp, advance(r.monitor, tok))], ended), ended


def _settle(r: DecodeRequest, live: list, done: list) -> list:
    """Move drafts that ended (end of text, a stop rule, the budget) to ``done``; keep the rest."""
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
    """Run every draft but its last token over the prompt in one forward, scoring each exactly."""
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
    """The drafts within ``INCOHERENT_NATS`` a token of the best one, best first."""
    def per_token(b):
        return b.logprob / max(1, len(b.ids))
    if not branches:
        return branches
    best = max(per_token(b) for b in branches)
    kept = [b for b in branches if per_token(b) >= best - INCOHERENT_NATS or math.isclose(
        per_token(b), best)]
    return sorted(kept, key=per_token, reverse=True)       # the most likely one leads
