"""The drafters a speculative decoder calls each step: ``drafter(context, budget)`` -> a draft
tree; each keeps its completion's steps, so that the meter learns from the finished output."""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

from inkling.runtime.model_runtime import ModelRuntime

from inkling.completion.decoding.names import DraftMode
from inkling.completion.drafting.acceptance import AcceptanceMeter
from inkling.completion.drafting.draft_tree import EMPTY, DraftTree
from inkling.completion.drafting.prompt_lookup import prompt_lookup
from inkling.completion.drafting.suffix_drafter import Candidate, SuffixDrafter, pick


def drafter_for(mode: DraftMode, prompt, runtime: ModelRuntime, block: bool, meter: AcceptanceMeter,
                sources: Callable[[], dict]):
    """The drafter ``mode`` names for one completion at ``prompt``, or None (also where ``meter``
    idles this one); drafts end at the end of text, and at a line end unless ``block``."""
    if mode == DraftMode.PROMPT_LOOKUP:
        ends = runtime.stop_ids if block else runtime.stop_ids | line_end_ids(runtime)
        return PromptLookupDrafter(prompt.ids, ends)
    if mode != DraftMode.SUFFIX or not meter.drafts_completion():
        return None
    ends = runtime.stop_ids if block else runtime.stop_ids | line_end_ids(runtime)
    return TreeDrafter(SuffixDrafter(sources()), meter, prompt.prefix_ids, ends)


@dataclass(frozen=True)
class Drafting:
    """One completion's drafter, the draft run in the prompt's forward, suffix's meter (or None)."""
    drafter: PromptLookupDrafter | TreeDrafter | None = None
    first: DraftTree | None = None
    meter: AcceptanceMeter | None = None

    def lesson(self, one: bool, output: list[int]) -> "Lesson | None":
        """What ``output`` teaches the drafter; None unless a one-draft plan (``one``) searched."""
        if self.drafter is None or not self.drafter.steps or not one:
            return None
        return Lesson(self.drafter, output)


@dataclass(frozen=True)
class Lesson:
    """A completion's finished first draft, for its drafter to learn from once it settles."""
    drafter: PromptLookupDrafter | TreeDrafter
    output: list[int]

    def learn(self) -> bool:
        return bool(self.drafter.learn(self.output))


def drafting_for(mode: DraftMode, plan, prompt, runtime: ModelRuntime, meter: AcceptanceMeter,
                 sources: Callable[[], dict]) -> Drafting:
    """The drafter ``mode`` names where ``plan`` lets one run, and a one-draft plan's first."""
    drafter = drafter_for(mode if plan.drafting else DraftMode.NONE, prompt, runtime,
                          plan.block, meter, sources)
    first = drafter(drafter.context, plan.budget) if drafter is not None and plan.one else None
    return Drafting(drafter, first, meter if mode == DraftMode.SUFFIX else None)


def line_end_ids(runtime: ModelRuntime) -> frozenset[int]:
    """Ids of the tokens whose text holds a line end, found once per model."""
    found = runtime.attached.get("line_end_ids")
    if found is None:
        tokenizer = runtime.tokenizer
        found = runtime.attached["line_end_ids"] = frozenset(
            i for i in range(tokenizer.get_vocab_size()) if "\n" in tokenizer.decode([i]))
    return found


class PromptLookupDrafter:
    """Prompt-lookup decoding: drafts from the prompt itself (``prompt_lookup``)."""

    def __init__(self, prompt_ids: list[int], ends: frozenset[int]):
        self.context = list(prompt_ids)      # what drafts continue: the whole prompt
        self.ends = ends                     # ids that end a draft (line ends, end of text)
        self.times: list[float] = []         # ms of each step
        self.steps: list = []                # nothing to learn from
        self.last_search_ms: float | None = None     # not measured against plain steps

    def __call__(self, context: list[int], budget: int) -> DraftTree:
        return prompt_lookup(context, budget, self.ends)

    def learn(self, output: list[int]) -> bool:
        return False


class TreeDrafter:
    """Suffix drafting at one completion: the admitted sources' best-valued tree, where it pays."""

    def __init__(self, drafter: SuffixDrafter, meter: AcceptanceMeter, prefix_ids: list[int],
                 ends: frozenset[int]):
        self.drafter, self.meter, self.ends = drafter, meter, ends
        self.context = list(prefix_ids)      # what drafts continue: the ids before the cursor
        self.steps: list[tuple[int, list[Candidate], set[str], str]] = []
        self.times: list[float] = []         # ms of each step, searched or not
        self.last_search_ms: float | None = None     # the last step's searches (None: none)

    def __call__(self, context: list[int], budget: int) -> DraftTree:
        t0 = time.perf_counter()
        try:
            return self._step(context, budget)
        finally:
            self.times.append((time.perf_counter() - t0) * 1000)

    def _step(self, context: list[int], budget: int) -> DraftTree:
        meter, drafter = self.meter, self.drafter
        self.last_search_ms = None
        searched = meter.admitted(drafter.names())
        if not searched:
            return EMPTY
        spent: dict[str, float] = {}
        generated = context[len(self.context):]
        t0 = time.perf_counter()
        found = drafter.candidates(context, budget, generated,
                                   lambda source: meter.limits(drafter.limits, source),
                                   searched, spent)
        meter.searched(spent)
        tree = pick(found, self.ends, meter.value)
        if tree.tokens and not meter.pays(tree):
            tree = EMPTY
        self.last_search_ms = (time.perf_counter() - t0) * 1000
        self.steps.append((len(generated), found, set(spent), tree.source if tree.tokens else ""))
        return tree

    def learn(self, output: list[int]) -> bool:
        """Score every step against the greedy ``output``; False when there was nothing to learn."""
        if not self.steps:
            return False
        for at, candidates, searched, verified in self.steps:
            if at > len(output):
                continue
            best = self.meter.learn_step(candidates, searched, output[at:])
            for source, n in best.items():
                if source != verified:
                    self.meter.record(n, source)
        return True
