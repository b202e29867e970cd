"""The parts of every decoder's step: a token chosen under the monitor's mask, a draft ended.
A draft ends as a ``Decoded`` (stop rule, budget, end of text); cancelling raises ``Cancelled``."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

import torch

from inkling.cache.prompt_cache import PromptCache

from inkling.completion.decoding.mask_bias import MaskBiases

if TYPE_CHECKING:                    # the request names Decoded's users, not the reverse
    from inkling.completion.decoding.request import DecodeRequest


BIASES = MaskBiases()                # the masks' biases, kept across steps and completions


class Cancelled(Exception):
    """The request was cancelled; decoding stopped between forward passes."""


@dataclass
class Decoded:
    text: str
    token_ids: list[int]
    logprob: float            # sum of the chosen tokens' log-probabilities
    forwards: int             # decoding forward passes (the prompt's are not counted)
    stopped_by: str           # "stop-rule" | "end-of-text" | "max-tokens" | "lead-extent"
    score: float | None = None  # log-probability a token it is ranked by (None: logprob's)
    lps: list[float] = field(default_factory=list)   # each token's (where the decoder kept them)


def pick(logits: torch.Tensor) -> tuple[int, float]:
    """logits: [vocab] -> (argmax token, its log-probability)."""
    tok = int(torch.argmax(logits))
    return tok, float(torch.log_softmax(logits, -1)[tok])


def masked(logits: torch.Tensor, monitor) -> torch.Tensor:
    """``logits`` [vocab] with the monitor's disallowed tokens (and ids past its mask) at -inf."""
    if monitor is None:
        return logits
    allowed = monitor.mask(logits.device)                  # None or bool [vocab']
    if allowed is None:
        return logits
    return logits + BIASES.bias(allowed, logits)            # [vocab]: + 0 or -inf


def advance(monitor, tok: int):
    """The monitor state after ``tok`` (None without a monitor)."""
    return None if monitor is None else monitor.advance_token(tok)


def forced_ids(monitor, encode: Callable[[str], list[int]]) -> list[int]:
    """Token ids of the name the monitor forces next, or [] (fed with the step's token)."""
    forced = getattr(monitor, "forced_text", None)
    text = forced() if forced is not None else ""
    return encode(text) if text else []


def stopped(r: DecodeRequest, ids: list[int], logprob: float, forwards: int
            ) -> Decoded | None:
    """The draft if ``r.stop`` or ``r.budget`` ends it after ``ids``, else None."""
    text = r.decode(ids)
    cut = r.stop.cut(text) if not text.endswith("\ufffd") else None
    if cut is not None:
        return Decoded(text[:cut], ids, logprob, forwards, "stop-rule")
    if len(ids) >= r.budget:
        return finish(r, ids, logprob, forwards, "max-tokens")
    return None


def finish(r: DecodeRequest, ids: list[int], logprob: float, forwards: int, why: str
           ) -> Decoded:
    """The draft ``ids`` ended (``why``), cut where ``r.stop`` ends a complete text."""
    text = r.decode(ids).rstrip("\ufffd")
    cut = r.stop.cut(text, final=True)
    return Decoded(text[:cut], ids, logprob, forwards, why)


def settled(cache: PromptCache, prompt: int, done: Decoded, lps: list[float]) -> Decoded:
    """``done``, with the cache cut to the prompt plus its tokens but the last, as greedy leaves it.
    The next completion then finds the same cache whichever decoder ran."""
    cache.truncate(prompt + max(0, len(done.token_ids) - 1))
    done.lps = lps[:len(done.token_ids)]
    return done
