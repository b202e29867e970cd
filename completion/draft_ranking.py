"""Drafts are deduplicated (identical after trimming trailing whitespace), empty ones
dropped, and ranked by length-normalised model log-probability."""
from __future__ import annotations

from .decoding import Decoded


def normalised_logprob(d: Decoded) -> float:
    return d.logprob / max(1, len(d.token_ids))


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
