"""Token-level edit hunks between the ids a cache holds and a new prompt: common head and tail
directly, the middle's matching blocks from difflib, so several edits give several hunks."""
from __future__ import annotations

from dataclasses import dataclass
from difflib import SequenceMatcher

MIN_MATCH = 4          # shorter matches in the middle are not worth reusing


@dataclass(frozen=True)
class Segment:
    start: int                 # position in the new prompt
    end: int
    old_start: int | None      # where the run sits in the cache, None for new tokens

    @property
    def kept(self) -> bool:
        return self.old_start is not None

    @property
    def shift(self) -> int:
        return 0 if self.old_start is None else self.start - self.old_start

    def __len__(self) -> int:
        return self.end - self.start


def _head(a: list[int], b: list[int]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def _tail(a: list[int], b: list[int], head: int) -> int:
    n = min(len(a), len(b)) - head
    i = 0
    while i < n and a[-1 - i] == b[-1 - i]:
        i += 1
    return i


def segments(old: list[int], new: list[int], min_match: int = MIN_MATCH) -> list[Segment]:
    """Segments covering ``new`` in order; kept runs are exact id matches in ``old``."""
    head = _head(old, new)
    tail = _tail(old, new, head)
    blocks: list[tuple[int, int, int]] = []          # (old_start, new_start, size)
    if head:
        blocks.append((0, 0, head))
    mid_old, mid_new = old[head:len(old) - tail], new[head:len(new) - tail]
    if mid_old and mid_new:
        matcher = SequenceMatcher(None, mid_old, mid_new, autojunk=False)
        for a, b, size in matcher.get_matching_blocks():
            if size >= min_match:
                blocks.append((head + a, head + b, size))
    if tail:
        blocks.append((len(old) - tail, len(new) - tail, tail))
    out: list[Segment] = []
    pos = 0
    for a, b, size in blocks:
        if b > pos:
            out.append(Segment(pos, b, None))
        out.append(Segment(b, b + size, a))
        pos = b + size
    if pos < len(new):
        out.append(Segment(pos, len(new), None))
    return out
