"""What every decoder takes: one ``DecodeRequest``."""
from __future__ import annotations

import zlib
from array import array
from dataclasses import dataclass, field
from typing import Callable, Protocol

import torch

from inkling.cache.prompt_cache import PromptCache

from inkling.completion.drafting.draft_tree import DraftTree
from inkling.completion.decoding.seams import Meter, Monitor, Rereader, Stop

Drafter = Callable[[list[int], int], DraftTree]   # (context ids, token budget) -> tree


class Shows(Protocol):
    """How a completion shows a draft (presentation.Presentation)."""
    def shown_text(self, text: str) -> str: ...


def never() -> bool:
    return False


def seeded(ids: list[int]) -> torch.Generator:
    """A generator seeded by the prompt's ids: the same prompt samples the same drafts."""
    return torch.Generator().manual_seed(zlib.crc32(array("q", ids).tobytes()))


def seeded_zero() -> torch.Generator:
    """A generator seeded by 0: what a request that samples nothing carries."""
    return torch.Generator().manual_seed(0)


@dataclass(frozen=True)
class DecodeRequest:
    """One completion's decoding; the cache holds the prompt and ``logits`` are its last position's.
    Every decoder leaves the cache at the prompt."""
    cache: PromptCache
    logits: torch.Tensor                 # [vocab] at the prompt's last position
    stop: Stop                           # where a draft ends (a line, a block, a loop)
    budget: int                          # new tokens a draft may take at most
    stop_ids: frozenset[int]             # end-of-text ids
    decode: Callable[[list[int]], str]   # ids -> text (token healing wraps it)
    k: int = 1                           # drafts asked for
    cancelled: Callable[[], bool] = never
    monitor: Monitor | None = None       # the analysis state that masks tokens, or None
    drafter: Drafter | None = None       # draft trees to verify, or None
    context: list[int] = field(default_factory=list)   # ids before the cursor
    meter: Meter | None = None           # AcceptanceMeter: what verification kept, or None
    first: DraftTree | None = None       # a draft that ran in the prompt's forward
    first_logits: torch.Tensor | None = None   # [len(first), vocab], its rows
    first_rows: int = 1                  # prompt tokens that forward ran
    sources: dict = field(default_factory=dict)   # n-gram count sources (superposed)
    floor: int = 0                       # alternatives' tokens not cut under this (k > 1)
    temperature: float = 0.0             # alternatives' later tokens sampled at it (0: greedy)
    width: int = 4                       # beam search's hypotheses a step (at least k)
    presentation: Shows | None = None    # how a draft's text would be shown, or None
    reread: Rereader | None = None       # rereading.Rereading of the beam's drafts, or None
    rereads: int = 0                     # the beam's best distinct drafts reread (with reread)
    generator: torch.Generator = field(default_factory=seeded_zero)   # samples' random numbers
