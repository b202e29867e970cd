"""Draft ranking: duplicates and empty drafts dropped, best log-probability a token first.
``worth_showing`` keeps the alternatives worth showing and gives each left out its reason."""
from __future__ import annotations

import re
from dataclasses import dataclass

from inkling.completion.decoding.names import Decoder
from inkling.completion.decoding.steps import Decoded

# why a draft was not shown (the server reports them in inkling/lastCompletion)
EMPTY = "empty"
DUPLICATE = "duplicate"
WHITESPACE = "whitespace-only variant"
PREFIX = "strict prefix of another draft"
SHORT = "shorter than a word"
UNLIKELY = "far less likely than the lead"
MIN_WORD_CHARS = 2        # an alternative needs at least this many non-blank characters

_BLANKS = re.compile(r"\s+")


def normalised_logprob(d: Decoded) -> float:
    return d.score if d.score is not None else d.logprob / max(1, len(d.token_ids))


def rank_drafts(decoded: list[Decoded], keep_empty: bool = False) -> list[Decoded]:
    seen: set[str] = set()
    out = []
    for d in sorted(decoded, key=normalised_logprob, reverse=True):
        key = d.text.rstrip()
        if key in seen or (not key and not keep_empty):
            continue
        seen.add(key)
        out.append(d)
    return out


@dataclass(frozen=True)
class Dropped:
    """A draft that was not shown: its rank among the decoded drafts, text and reason."""
    rank: int
    text: str
    reason: str
    like: int | None = None     # the rank of the draft it duplicates or is a prefix of


def worth_showing(texts: list[str], per_token: list[float] | None = None, prune: float = 0.0
                  ) -> tuple[list[int], list[Dropped]]:
    """Which of ``texts`` (best first) to show: (indices kept, the others ``Dropped``).
    A lone draft is kept; an alternative goes if blank, repeated, a whitespace variant, under
    ``MIN_WORD_CHARS``, a strict prefix of another, or ``prune`` nats (``per_token``) below it."""
    if len(texts) <= 1:             # one draft is the answer, even an empty one
        return list(range(len(texts))), []
    bare = [_BLANKS.sub("", t) for t in texts]
    kept: list[int] = []
    dropped: list[Dropped] = []
    for i, text in enumerate(texts):
        reason, like = None, None
        if not bare[i]:
            reason = EMPTY
        elif kept:                      # an alternative to the lead
            same = next((j for j in kept if bare[j] == bare[i]), None)
            longer = next((j for j in range(len(texts)) if j != i and len(bare[j]) > len(bare[i])
                           and bare[j].startswith(bare[i])), None)
            if same is not None:
                reason, like = (DUPLICATE if texts[same].rstrip() == text.rstrip()
                                else WHITESPACE), same
            elif len(bare[i]) < MIN_WORD_CHARS:
                reason = SHORT
            elif longer is not None:
                reason, like = PREFIX, longer
            elif prune and per_token is not None and per_token[i] < per_token[kept[0]] - prune:
                reason, like = UNLIKELY, kept[0]
        if reason is None:
            kept.append(i)
        else:
            dropped.append(Dropped(i, text, reason, like))
    return kept, dropped


def shortfall(asked: int, decoded: int, shown: int, dropped: list[Dropped],
              decoder: Decoder) -> str:
    """Why fewer than ``asked`` drafts were shown, in one sentence ("" when none are missing)."""
    if shown >= asked:
        return ""
    parts = []
    if decoded < asked:
        if decoder == Decoder.GREEDY:
            parts.append("the greedy decoder gives one draft (completion.decoder 'beam', "
                         "'branches', 'superposed' or 'sequential' give several)")
        elif decoder in (Decoder.BRANCHES, Decoder.SEQUENTIAL):
            parts.append(f"the {decoder} decoder found {decoded} distinct drafts (an "
                         "alternative starts only from a token at least 0.1% likely where the "
                         "model is first unsure)")
        else:
            parts.append(f"the {decoder} decoder found {decoded} distinct drafts")
    counts: dict[str, int] = {}
    for d in dropped:
        counts[d.reason] = counts.get(d.reason, 0) + 1
    if counts:
        parts.append("left out: " + ", ".join(f"{n} {reason}" for reason, n in counts.items()))
    return f"{shown} of {asked} drafts shown: " + "; ".join(parts)
