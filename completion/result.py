"""What a completion answers: its drafts and what it took to make them."""
from __future__ import annotations

from dataclasses import dataclass, field

from inkling.completion.decoding.names import Trigger
from inkling.completion.document import Position
from inkling.completion.drafting.drafter import Lesson


@dataclass(frozen=True)
class Draft:
    id: str
    text: str
    logprob: float
    tokens: int


@dataclass(frozen=True)
class GuardCut:
    """What the syntax guard did to the first draft after its trims (the replay's ``guard_cut``)."""
    chars: int = 0          # characters it cut from the draft's end (0: kept whole, or no guard)
    emptied: bool = False   # it left nothing but whitespace of a draft that had more

    @classmethod
    def of(cls, before: str, after: str) -> "GuardCut":
        """The cut from ``before`` (the draft the guard was given) to ``after``, a prefix."""
        return cls(len(before) - len(after), bool(before.strip()) and not after.strip())


@dataclass
class Completion:
    uri: str
    position: Position
    drafts: list[Draft]
    trigger: Trigger
    first_token_ms: float = 0.0     # prompt built and cache brought up to date
    latency_ms: float = 0.0         # drafts ready
    model_ms: float = 0.0           # time inside model forward passes
    forwards: int = 0               # decoding forward passes
    tokens: int = 0                 # tokens emitted into drafts
    prefill_tokens: int = 0
    reused_tokens: int = 0
    stale_tokens: int = 0           # cached tokens computed against text that has changed
    refreshed: bool = False         # this completion recomputed stale tokens
    cache_mode: str = ""            # the mode that brought the cache up to date
    stopped_by: str = ""
    block: bool = False
    draft_ms: tuple[float, ...] = ()   # each retrieval drafting step (search and tree), in ms
    asked: int = 1                  # drafts asked for (k)
    dropped: tuple = ()             # decoding.ranking.Dropped: decoded drafts not worth showing
    shortfall: str = ""             # why fewer than ``asked`` drafts are shown ("" if none)
    context_tokens: int = 0         # tokens of the repository-context block in the prompt
    context_text: str = ""          # that block as the model read it
    guard: GuardCut = GuardCut()    # what the syntax guard cut from the first decoded draft
    # what the drafter learns from this completion when it settles (Engine.settle)
    lesson: Lesson | None = field(default=None, repr=False, compare=False)


@dataclass
class EngineStats:
    completions: int = 0
    accepted: int = 0
    accepted_chars: int = 0
    refreshes: int = 0          # stale caches recomputed (during syncs and in idle time)
    learnt: int = 0             # completions the drafting meter has learnt from
    undrafted: int = 0          # suffix-drafting completions decoded without it (it idled)
