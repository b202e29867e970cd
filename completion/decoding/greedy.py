"""Greedy decoding over a prompt cache, with stop rules and cancellation."""
from __future__ import annotations

import torch

from inkling.completion.decoding.request import DecodeRequest
from inkling.completion.decoding.steps import (Cancelled, Decoded, advance, finish, forced_ids,
                                               masked, pick, settled, stopped)


def greedy_decode(r: DecodeRequest) -> Decoded:
    """Decode from ``r.logits`` ([vocab], the prompt's last position) until a stop.
    A name the monitor forces is fed whole in the step's forward."""
    cache, logits, monitor = r.cache, r.logits, r.monitor
    ids: list[int] = []
    lps: list[float] = []                                    # each token's log-probability
    logprob, forwards, prompt = 0.0, 0, len(cache.ids)
    while True:
        tok, lp = pick(masked(logits, monitor))
        monitor = advance(monitor, tok)
        if tok in r.stop_ids:
            return settled(cache, prompt, finish(r, ids, logprob, forwards, "end-of-text"),
                           lps)
        ids.append(tok)
        lps.append(lp)
        logprob += lp
        done = stopped(r, ids, logprob, forwards)
        if done is not None:
            return settled(cache, prompt, done, lps)
        if r.cancelled():
            raise Cancelled()
        jump = forced_ids(monitor, cache.runtime.encode)[:r.budget - len(ids)]
        out = cache.extend([tok] + jump)                     # [1 + jump, vocab]
        forwards += 1
        for i, t in enumerate(jump):                         # the forced name, in one pass
            lps.append(float(torch.log_softmax(out[i], -1)[t]))
            logprob += lps[-1]
            monitor = advance(monitor, t)
            ids.append(t)
            done = stopped(r, ids, logprob, forwards)
            if done is not None:                             # stop rules token by token
                return settled(cache, prompt, done, lps)
        logits = out[-1]                                     # [vocab]
