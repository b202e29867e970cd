"""The values one completion passes from stage to stage (``Engine.complete``); here, not in
result.py, because the presentation the stages use imports result.py."""
from __future__ import annotations

from typing import Callable, NamedTuple

import torch

from inkling.cache.prompt_cache import PromptCache, SyncResult

from inkling.completion.decoding.names import Trigger
from inkling.completion.decoding.plan import DecodePlan
from inkling.completion.decoding.ranking import Dropped, shortfall
from inkling.completion.decoding.steps import Decoded
from inkling.completion.document import Position
from inkling.completion.drafting.draft_tree import DraftTree
from inkling.completion.drafting.drafter import Drafting, Lesson
from inkling.completion.presentation import Presentation
from inkling.completion.prompt.builder import Prompt
from inkling.completion.prompt.context_block import ContextBlock
from inkling.completion.result import Completion, Draft, GuardCut


class Asked(NamedTuple):
    uri: str
    position: Position
    trigger: Trigger
    cancelled: Callable[[], bool]


class Prompted(NamedTuple):
    prompt: Prompt
    block: ContextBlock          # the repository-context block the prompt holds


class Planned(NamedTuple):
    plan: DecodePlan
    drafting: Drafting


class Synced(NamedTuple):
    """The cache's sync, with the draft tree that ran in the prompt's forward (None: none)."""
    cache: PromptCache
    result: SyncResult
    first: DraftTree | None
    first_logits: torch.Tensor | None     # [len(first), vocab]


class DecodedDrafts(NamedTuple):
    outs: list[Decoded]          # best first
    forwards: int                # decoding forward passes
    presentation: Presentation   # how they are shown
    lesson: Lesson | None        # what the drafter learns from them when settled


class Shown(NamedTuple):
    drafts: list[Draft]
    dropped: list[Dropped]       # decoded drafts not worth showing, with why
    cut: GuardCut                # what the syntax guard cut from the first


class Times(NamedTuple):
    first_token_ms: float        # prompt built and cache synced
    latency_ms: float            # drafts ready
    model_ms: float              # inside model forward passes


def completion_of(asked: Asked, prompted: Prompted, planned: Planned, synced: Synced,
                  decoded: DecodedDrafts, shown: Shown, times: Times) -> Completion:
    """The answer of one completion, from its stages' values."""
    plan, drafter, s, outs = planned.plan, planned.drafting.drafter, synced.result, decoded.outs
    return Completion(
        asked.uri, asked.position, shown.drafts, asked.trigger, *times,
        forwards=decoded.forwards + 1, tokens=sum(len(o.token_ids) for o in outs),
        prefill_tokens=s.prefilled, reused_tokens=s.reused, stale_tokens=s.stale,
        refreshed=s.refreshed, cache_mode=s.mode,
        stopped_by=outs[0].stopped_by if outs else "", block=plan.block,
        draft_ms=tuple(drafter.times) if drafter is not None else (), asked=plan.k,
        dropped=tuple(shown.dropped),
        shortfall=shortfall(plan.k, len(outs), len(shown.drafts), shown.dropped, plan.decoder),
        context_tokens=len(prompted.block), context_text=prompted.block.text,
        guard=shown.cut, lesson=decoded.lesson)
