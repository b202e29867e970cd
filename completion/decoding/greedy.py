"""Greedy decoding over a prompt cache, with stop rules and cancellation."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch

from inkling.cache.prompt_cache import PromptCache

from .stop_rules import StopRule


class Cancelled(Exception):
    """The request was cancelled; decoding stopped between forward passes."""


@dataclass
class Decoded:
    text: str
    token_ids: list[int]
    logprob: float            # sum of the chosen tokens' log-probabilities
    forwards: int             # decoding forward passes (the prompt's are not counted)
    stopped_by: str           # "stop-rule" | "end-of-text" | "max-tokens"


def pick(logits: torch.Tensor) -> tuple[int, float]:
    """logits: [vocab] -> (argmax token, its log-probability)."""
    tok = int(torch.argmax(logits))
    return tok, float(torch.log_softmax(logits, -1)[tok])


def masked(logits: torch.Tensor, monitor) -> torch.Tensor:
    """logits [vocab] with the monitor's disallowed tokens at -inf (unchanged without one)."""
    if monitor is None:
        return logits
    allowed = monitor.mask(logits.device)                  # None or bool [vocab']
    if allowed is None:
        return logits
    n = logits.shape[-1]
    if allowed.shape[-1] < n:                               # ids the tokenizer does not know
        allowed = torch.cat((allowed, allowed.new_zeros(n - allowed.shape[-1])))
    return logits.masked_fill(~allowed[:n], float("-inf"))


def advance(monitor, tok: int):
    return None if monitor is None else monitor.advance_token(tok)


def forced_ids(monitor, encode: Callable[[str], list[int]]) -> list[int]:
    """Token ids of the text the monitor forces next (the rest of the only name that
    can come), or []: the decoder runs them with the step's token in one forward."""
    forced = getattr(monitor, "forced_text", None)
    text = forced() if forced is not None else ""
    return encode(text) if text else []


def greedy_decode(cache: PromptCache, logits: torch.Tensor, stop: StopRule, max_new_tokens: int,
                  stop_ids: frozenset[int], decode: Callable[[list[int]], str],
                  cancelled: Callable[[], bool] = lambda: False, monitor=None) -> Decoded:
    """Decode from ``logits`` ([vocab], the prompt's last position) until a stop.

    ``monitor``: an analysis MonitorState masking what cannot be right, or None. Where
    it allows only one name, the rest of that name is taken in the same forward pass
    as the step's token instead of one token per pass."""
    ids: list[int] = []
    logprob, forwards, prompt = 0.0, 0, len(cache.ids)
    while True:
        tok, lp = pick(masked(logits, monitor))
        monitor = advance(monitor, tok)
        if tok in stop_ids:
            return settled(cache, prompt, finish(ids, logprob, forwards, stop, decode,
                                                 "end-of-text"))
        ids.append(tok)
        logprob += lp
        done = stopped(ids, logprob, forwards, stop, decode, max_new_tokens)
        if done is not None:
            return settled(cache, prompt, done)
        if cancelled():
            raise Cancelled()
        jump = forced_ids(monitor, cache.runtime.encode)[:max_new_tokens - len(ids)]
        out = cache.extend([tok] + jump)                     # [1 + jump, vocab]
        forwards += 1
        for i, t in enumerate(jump):                         # the forced name, in one pass
            logprob += float(torch.log_softmax(out[i], -1)[t])
            monitor = advance(monitor, t)
            ids.append(t)
            done = stopped(ids, logprob, forwards, stop, decode, max_new_tokens)
            if done is not None:                             # stop rules token by token
                return settled(cache, prompt, done)
        logits = out[-1]                                     # [vocab]


def settled(cache: PromptCache, prompt: int, done: Decoded) -> Decoded:
    """``done``, with the cache holding the prompt's ``prompt`` entries and the output's
    tokens but its last: what greedy decoding fed, and what every decoder leaves, so the
    next completion starts from the same cache whichever decoder ran (a tree may have
    cached tokens past the stop, a forced name tokens past it)."""
    cache.truncate(prompt + max(0, len(done.token_ids) - 1))
    return done


def stopped(ids, logprob, forwards, stop: StopRule, decode, max_new_tokens) -> Decoded | None:
    """The draft if a stop rule or the token budget ends it after ``ids``, else None."""
    text = decode(ids)
    cut = stop.cut(text) if not text.endswith("\ufffd") else None
    if cut is not None:
        return Decoded(text[:cut], ids, logprob, forwards, "stop-rule")
    if len(ids) >= max_new_tokens:
        return finish(ids, logprob, forwards, stop, decode, "max-tokens")
    return None


def finish(ids, logprob, forwards, stop: StopRule, decode, why: str) -> Decoded:
    text = decode(ids).rstrip("\ufffd")
    cut = stop.cut(text, final=True)
    return Decoded(text[:cut], ids, logprob, forwards, why)

