"""Beam search: the likeliest whole lines instead of the likeliest next tokens.

Greedy decoding takes the likeliest token at each step, and a small model's likeliest
first token often leads to a less likely line than its second: on the model card's
held-out lines (run-8 weights, `inkling evaluate --fim-order spm`) the removed line was
likelier as a whole than greedy's wrong line at 79 of the 415 lines greedy missed. Beam
search keeps the ``width`` likeliest partial drafts (hypotheses) a step and ends with
the best finished ones, ranked by log-probability over length ** ``LENGTH_PENALTY``
(0: the sum, which favours short lines; 1: the mean a token, which favours long ones;
0.5 measured best, benchmarks/README.md).

All live hypotheses advance in one forward pass a step, as the branches decoder's do:
each one's newest token is a node that sees the prompt and its own ancestors only, at
the position it would have in a sequence of its own (``cache.extend_masked``); the
nodes of hypotheses dropped later stay in the cache, unseen by the others, until the
decoder truncates the cache back to the prompt. A hypothesis ends where a draft ends
(a stop rule, end of text, the token budget); each step's candidates are every live
hypothesis' ``width`` likeliest tokens under its own monitor state (the analysis
monitor, the blank-line rule, token healing). The search ends when no live hypothesis,
at its length, ranks above the best finished one (as transformers' beam search does
without early stopping), or when none is left. A finished draft that would be shown
empty (it repeats the line after the cursor: three quotes before a docstring's end, or the
syntax guard cuts it at its start) does not count as finished, and the search goes on
(the others where no other finished): the bundled model's best line was such a one at 40
of the 462 card lines, where greedy's was at 23.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import torch

from inkling.completion.decoding.ranking import rank_drafts
from inkling.completion.decoding.request import DecodeRequest
from inkling.completion.decoding.rereading import reread
from inkling.completion.decoding.seams import Monitor
from inkling.completion.decoding.steps import Cancelled, Decoded, advance, finish, masked, stopped

LENGTH_PENALTY = 0.5


@dataclass
class Hypothesis:
    ids: list[int]
    lps: list[float]                                   # each token's log-probability
    monitor: Monitor | None = None                     # its analysis state, or None
    cached: list[int] = field(default_factory=list)    # cache indices of its tokens but the last

    @property
    def logprob(self) -> float:
        return sum(self.lps)


def ranked(logprob: float, tokens: int) -> float:
    """A draft's rank: its log-probability over its length ** LENGTH_PENALTY."""
    return logprob / max(1, tokens) ** LENGTH_PENALTY


def candidates(hyps: list[Hypothesis], rows: torch.Tensor, width: int
               ) -> list[tuple[float, int, int, float]]:
    """(sum log-probability, hypothesis index, token, its log-probability) of each live
    hypothesis' ``width`` likeliest allowed tokens, likeliest sums first.
    rows: [len(hyps), vocab], each hypothesis' next-token logits."""
    out = []
    for h, (hyp, logits) in enumerate(zip(hyps, rows)):
        logp = torch.log_softmax(masked(logits, hyp.monitor).float(), -1)      # [vocab]
        top = torch.topk(logp, min(width, logp.shape[-1]))
        base = hyp.logprob
        out.extend((base + lp, h, t, lp) for lp, t in zip(top.values.tolist(),
                                                          top.indices.tolist())
                   if lp != float("-inf"))
    return sorted(out, key=lambda c: -c[0])


def beam_decode(r: DecodeRequest) -> tuple[list[Decoded], int]:
    """The best finished drafts of a beam search of ``max(r.k, r.width)`` hypotheses
    (best first by ``ranked``, as ``Decoded.score``) and the forward passes it took; the
    cache is left holding the prompt."""
    width = max(r.k, r.width)
    shared = len(r.cache.ids)
    hyps = [Hypothesis([], [], r.monitor)]
    rows = r.logits[None]                                              # [1, vocab]
    finished: list[Decoded] = []
    unseen: list[Decoded] = []                       # finished, but would be shown empty
    forwards = 0
    while True:
        live = []
        for total, h, tok, lp in candidates(hyps, rows, width):
            hyp = hyps[h]
            ids = hyp.ids + [tok]
            if tok in r.stop_ids:         # its log-probability counted, as sequential counts it
                done = finish(r, hyp.ids, total, forwards, "end-of-text")
                done.lps = list(hyp.lps)
            else:
                done = stopped(r, ids, total, forwards)
                if done is not None:
                    done.lps = hyp.lps + [lp]
            if done is not None:
                (unseen if shown_empty(done.text, r) else finished).append(done)
                continue
            if len(live) < width:
                live.append(Hypothesis(ids, hyp.lps + [lp], advance(hyp.monitor, tok),
                                       list(hyp.cached)))
        best = max((ranked(d.logprob, len(d.token_ids)) for d in finished), default=None)
        if not live or (best is not None and
                        max(ranked(h.logprob, len(h.ids)) for h in live) < best):
            break
        if r.cancelled():
            r.cache.truncate(shared)
            raise Cancelled()
        rows = _step(r, shared, live)                                  # [len(live), vocab]
        forwards += 1
        hyps = live
    r.cache.truncate(shared)            # the prompt, as every multi-draft decoder leaves it
    finished = finished or unseen
    for d in finished:
        d.score = ranked(d.logprob, len(d.token_ids))
    return sorted(finished, key=lambda d: -d.score), forwards


def beam_decode_reread(r: DecodeRequest) -> tuple[list[Decoded], int]:
    """``beam_decode``'s drafts, its best distinct ``r.rereads`` reread in place
    (``rereading.reread``) where the request has a ``reread`` and a count."""
    outs, forwards = beam_decode(r)
    if r.reread is not None and r.rereads:
        outs = reread(rank_drafts(outs)[:r.rereads], r.reread, r.presentation,
                       r.cancelled)
    return outs, forwards


def shown_empty(text: str, r: DecodeRequest) -> bool:
    """Whether a draft's ``text`` would be shown empty (``r.presentation``): it repeats the
    line after the cursor, or the syntax guard cuts it at its start."""
    p = r.presentation
    return p is not None and bool(text.strip()) and not p.shown_text(text).strip()


def _step(r: DecodeRequest, shared: int, live: list[Hypothesis]) -> torch.Tensor:
    """One forward pass for every live hypothesis: its newest token, seeing the prompt's
    first ``shared`` entries and its own earlier tokens only. Returns each one's
    next-token logits, [len(live), vocab]; each hypothesis' ``cached`` gains its entry."""
    start = len(r.cache.ids)
    tokens, positions, visible = [], [], []
    for i, h in enumerate(live):
        h.cached.append(start + i)
        tokens.append(h.ids[-1])
        positions.append(shared + len(h.ids) - 1)
        visible.append(list(h.cached))
    return r.cache.extend_masked(tokens, positions, visible, shared)
