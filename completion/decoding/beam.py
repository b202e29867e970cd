"""Beam search: the likeliest whole lines instead of the likeliest next tokens.
Hypotheses advance in one forward a step as a tree over the prompt cache; a draft that would be
shown empty does not count as finished (docs/decisions/invoked-decoder.md)."""
from __future__ import annotations

from dataclasses import dataclass, field

import torch

from inkling.completion.decoding.ranking import rank_drafts
from inkling.completion.decoding.request import DecodeRequest
from inkling.completion.decoding.rereading import reread
from inkling.completion.decoding.seams import Monitor
from inkling.completion.decoding.steps import Cancelled, Decoded, advance, finish, masked, stopped

LENGTH_PENALTY = 0.5            # 0 ranks by the sum (short lines win), 1 by the mean a token


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
    """(sum logprob, hypothesis, token, logprob) of each one's ``width`` best tokens, best first."""
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
    """The best finished drafts of a ``max(r.k, r.width)`` beam (``score`` order) and its passes."""
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
    """``beam_decode``'s drafts, its best distinct ``r.rereads`` reread in place where asked."""
    outs, forwards = beam_decode(r)
    if r.reread is not None and r.rereads:
        outs = reread(rank_drafts(outs)[:r.rereads], r.reread, r.presentation,
                       r.cancelled)
    return outs, forwards


def shown_empty(text: str, r: DecodeRequest) -> bool:
    """Whether a draft's ``text`` would be shown empty by ``r.presentation``."""
    p = r.presentation
    return p is not None and bool(text.strip()) and not p.shown_text(text).strip()


def _step(r: DecodeRequest, shared: int, live: list[Hypothesis]) -> torch.Tensor:
    """One forward of every live hypothesis' newest token; its logits [len(live), vocab]."""
    start = len(r.cache.ids)
    tokens, positions, visible = [], [], []
    for i, h in enumerate(live):
        h.cached.append(start + i)
        tokens.append(h.ids[-1])
        positions.append(shared + len(h.ids) - 1)
        visible.append(list(h.cached))
    return r.cache.extend_masked(tokens, positions, visible, shared)
