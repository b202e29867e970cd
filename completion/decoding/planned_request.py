"""The engine's ``DecodeRequest``, built whole from a completion's decode plan."""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable

from inkling.completion.drafting.drafter import Drafting
from inkling.completion.decoding.plan import DecodePlan
from inkling.completion.decoding.prompt_rules import with_prompt_rules
from inkling.completion.decoding.request import DecodeRequest, seeded, seeded_zero
from inkling.completion.decoding.rereading import Rereading
from inkling.completion.decoding.seams import Monitor
from inkling.completion.presentation import Presentation
from inkling.completion.stages import Synced


@dataclass(frozen=True)
class AtCursor:
    """What the cursor brings: the monitor's state (None: off), the presentation, n-gram sources."""
    monitor: Monitor | None
    presentation: Presentation
    ngram_sources: Callable[[], dict]


@contextmanager
def drafts_dropped_on_error(synced: Synced, prompt_rows: int):
    """On an error, truncate the cache to the prompt where the sync ran a draft with it."""
    try:
        yield
    except BaseException:
        if synced.first_logits is not None:
            synced.cache.truncate(prompt_rows)
        raise


def planned_request(plan: DecodePlan, prompt, synced: Synced, drafting: Drafting,
                    at: AtCursor, cancelled: Callable[[], bool]) -> DecodeRequest:
    """The request of ``prompt`` (prompt.builder.Prompt) decoded by ``plan``, cache ``synced``."""
    cache, runtime = synced.cache, synced.cache.runtime
    drafter = drafting.drafter
    if plan.drafting:
        context, sources = (drafter.context if drafter is not None else []), {}
    else:                                   # superposed and beam: the n-gram counts
        context, sources = list(prompt.prefix_ids), at.ngram_sources()
    reread = Rereading.of_text(runtime, prompt.prefix, prompt.suffix, plan.reread_lines,
                               plan.reread_window) if plan.rereads else None
    monitor, decode = with_prompt_rules(at.monitor, runtime.decode, runtime, prompt,
                                        plan.blank_lines)
    return DecodeRequest(
        cache, synced.result.logits, plan.stop, plan.budget, runtime.stop_ids, decode, plan.k,
        cancelled, monitor, drafter, context, drafting.meter, first=synced.first,
        first_logits=synced.first_logits, first_rows=synced.result.prefilled, sources=sources,
        floor=plan.floor, temperature=plan.temperature, width=plan.width,
        presentation=at.presentation,
        reread=reread, rereads=plan.rereads,
        generator=seeded(prompt.ids) if plan.temperature else seeded_zero())
