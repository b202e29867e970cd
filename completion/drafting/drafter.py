"""The drafters a speculative decoder calls at each step: ``drafter(context, budget)`` gives
a draft tree to verify. Each keeps what one completion's drafting did (its steps and their
times), so that the acceptance meter learns from the finished output afterwards."""
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
    """The drafter ``mode`` (``completion.draft``) names for one completion at ``prompt``,
    or None: a draft ends at the end of text, and at a line end unless the completion is
    a ``block``; ``sources()``: what suffix drafting searches (asked for only then). None
    for ``suffix`` too where ``meter`` says this completion does not draft (drafting
    idles: ``AcceptanceMeter.drafts_completion``)."""
    if mode == DraftMode.PROMPT_LOOKUP:
        ends = runtime.stop_ids if block else runtime.stop_ids | line_end_ids(runtime)
        return PromptLookupDrafter(prompt.ids, ends)
    if mode != DraftMode.SUFFIX or not meter.drafts_completion():
        return None
    ends = runtime.stop_ids if block else runtime.stop_ids | line_end_ids(runtime)
    return TreeDrafter(SuffixDrafter(sources()), meter, prompt.prefix_ids, ends)


@dataclass(frozen=True)
class Drafting:
    """What drafting brings to one completion: its drafter (None: none), the draft made
    to run in the prompt's forward (None: none), and the acceptance meter of suffix
    drafting (None: another mode)."""
    drafter: PromptLookupDrafter | TreeDrafter | None = None
    first: DraftTree | None = None
    meter: AcceptanceMeter | None = None

    def lesson(self, one: bool, output: list[int]) -> "Lesson | None":
        """What a completion whose first draft is ``output`` teaches the drafter (None:
        nothing; only a one-draft plan, ``one``, that searched is learnt from)."""
        if self.drafter is None or not self.drafter.steps or not one:
            return None
        return Lesson(self.drafter, output)


@dataclass(frozen=True)
class Lesson:
    """What one completion teaches its drafter: its finished first draft, scored against
    every drafting step (``TreeDrafter.learn``) once the completion settles."""
    drafter: PromptLookupDrafter | TreeDrafter
    output: list[int]

    def learn(self) -> bool:
        return bool(self.drafter.learn(self.output))


def drafting_for(mode: DraftMode, plan, prompt, runtime: ModelRuntime, meter: AcceptanceMeter,
                 sources: Callable[[], dict]) -> Drafting:
    """The drafter ``mode`` names where the decode ``plan`` (decoding.plan.DecodePlan) lets
    one run (``drafter_for``), and, for a one-draft plan, the draft it makes before the
    prompt's forward."""
    drafter = drafter_for(mode if plan.drafting else DraftMode.NONE, prompt, runtime,
                          plan.block, meter, sources)
    first = drafter(drafter.context, plan.budget) if drafter is not None and plan.one else None
    return Drafting(drafter, first, meter if mode == DraftMode.SUFFIX else None)


def line_end_ids(runtime: ModelRuntime) -> frozenset[int]:
    """The ids of the tokens whose text holds a line end (a line draft ends at one),
    found once per model."""
    found = runtime.attached.get("line_end_ids")
    if found is None:
        tokenizer = runtime.tokenizer
        found = runtime.attached["line_end_ids"] = frozenset(
            i for i in range(tokenizer.get_vocab_size()) if "\n" in tokenizer.decode([i]))
    return found


class PromptLookupDrafter:
    """Drafts from the prompt itself: the tokens that followed the context's tail the last
    time it occurred (prompt-lookup decoding)."""

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
    """Suffix drafting at one completion: the candidates of the sources the meter admits,
    the tree the meter values most, kept only where verifying it pays."""

    def __init__(self, drafter: SuffixDrafter, meter: AcceptanceMeter, prefix_ids: list[int],
                 ends: frozenset[int]):
        self.drafter, self.meter, self.ends = drafter, meter, ends
        self.context = list(prefix_ids)      # what drafts continue: the ids before the cursor
        # (tokens generated before the step, its candidates, the sources searched, the
        # source of the tree verified) of every step that searched
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
        """Score every step against the finished greedy ``output``: see
        ``AcceptanceMeter.learn_step``. A source passed over at a step is recorded with
        what its best candidate would have kept (the verified one was recorded then).
        True if there was anything to learn from."""
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
