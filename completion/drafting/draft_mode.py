"""Which drafting ``completion.draft auto`` runs, decided once a load: ``suffix`` where a forward of
the drafter's prior tree costs less, in one-row forwards, than the tokens it is expected to yield,
else ``none`` (docs/decisions/drafting-by-device.md)."""
from __future__ import annotations

import statistics
import time
from dataclasses import dataclass

import torch

from inkling.cache.modes import CacheMode
from inkling.cache.prompt_cache import PromptCache
from inkling.runtime.model_runtime import ModelRuntime

from inkling.completion.decoding.names import DraftMode

TREE_ROWS = (8, 16)      # the tree sizes the suffix drafter verifies (rows, root included)
PRIOR_ROWS = 16          # the row bucket of its tree at the meter's prior (AcceptanceMeter.limits)
CONTEXT = 512            # cached tokens before the timed rows: a typical prompt's length
ROUNDS = 5               # timed rounds (after one to warm up); the median is kept


@dataclass(frozen=True)
class DraftChoice:
    mode: DraftMode               # what auto runs: suffix or none
    reason: str                   # why, with the figures
    forward: str                  # the forward measured: native | compact | reference
    ms: dict[int, float]          # rows -> ms of one forward after CONTEXT cached tokens

    def report(self) -> dict:
        """What ``inkling/stats`` and the replay's config say of it."""
        return {"mode": self.mode, "reason": self.reason, "forward": self.forward,
                "rows": list(self.ms), "forward_ms": [round(ms, 3) for ms in self.ms.values()]}


def resolved(options, runtime: ModelRuntime, prior: float) -> DraftMode:
    """``completion.draft`` of ``options`` (InklingOptions) as it runs: ``auto`` as measured."""
    mode = DraftMode(options.completion.draft)
    return choice_for(runtime, options.model.forward, prior).mode if mode == DraftMode.AUTO \
        else mode


def in_use(options, runtime: ModelRuntime, prior: float) -> dict:
    """``inkling/stats``'s drafting: ``DraftChoice.report`` with "mode" (what runs) and "asked"."""
    asked, forward = options.completion.draft, options.model.forward
    choice = measured(runtime, forward)
    about = choice.report() if choice is not None else {
        "forward": runtime.forward_kind(forward), "rows": [], "forward_ms": []}
    if asked != DraftMode.AUTO:
        about["reason"] = f"completion.draft is {asked}"
    return {**about, "mode": resolved(options, runtime, prior), "asked": asked}


def choice_for(runtime: ModelRuntime, forward: str, prior: float) -> DraftChoice:
    """The choice for ``runtime``'s ``forward``, measured on the first call and kept with it."""
    kind = runtime.forward_kind(forward)
    key = ("draft_choice", kind)
    found = runtime.attached.get(key)
    if found is None:
        found = runtime.attached[key] = choose(forward_ms(runtime, forward), prior, kind)
    return found


def measured(runtime: ModelRuntime | None, forward: str) -> DraftChoice | None:
    """The choice already made for ``runtime``'s ``forward``, or None (nothing measured)."""
    if runtime is None:
        return None
    return runtime.attached.get(("draft_choice", runtime.forward_kind(forward)))


def choose(ms: dict[int, float], prior: float, forward: str) -> DraftChoice:
    """``suffix`` where PRIOR_ROWS rows cost under 1 + ``prior`` one-row forwards, else ``none``."""
    rows, tokens = PRIOR_ROWS, 1 + prior
    ratio = ms[rows] / ms[1]
    costs = f"a forward of {rows} rows costs {ms[rows]:.2f} ms, {ratio:.2f} one-row " \
            f"forwards of {ms[1]:.2f} ms ({forward})"
    if ratio < tokens:
        return DraftChoice(DraftMode.SUFFIX, f"{costs}: under the {tokens:.1f} tokens a verified "
                           "tree is expected to yield, so drafting pays", forward, ms)
    return DraftChoice(DraftMode.NONE, f"{costs}: not under the {tokens:.1f} tokens a verified "
                       "tree is expected to yield, so drafting would cost latency", forward, ms)


def forward_ms(runtime: ModelRuntime, forward: str, rows: tuple[int, ...] = (1, *TREE_ROWS),
               context: int = CONTEXT, rounds: int = ROUNDS) -> dict[int, float]:
    """rows -> median ms of a forward of that many chained rows after ``context`` cached tokens."""
    n = max(1, min(context, runtime.context_limit - max(rows) - 1))
    cache = PromptCache(runtime, CacheMode.FULL, forward=forward)
    cache.extend(_filler(runtime, n), last_only=True)
    times: dict[int, list[float]] = {r: [] for r in rows}
    for round_ in range(rounds + 1):
        for r in rows:
            ms = _timed_tree(cache, r, runtime.device)
            cache.truncate(n)
            if round_:
                times[r].append(ms)
    return {r: statistics.median(t) for r, t in times.items()}


def _timed_tree(cache: PromptCache, rows: int, device: torch.device) -> float:
    """ms of one forward of a chain of ``rows`` tokens after what ``cache`` holds."""
    tokens = _filler(cache.runtime, rows)
    parents = [-1] + list(range(rows - 1))
    _sync(device)
    t0 = time.perf_counter()
    cache.extend_tree(tokens, parents)
    _sync(device)
    return (time.perf_counter() - t0) * 1000


def _filler(runtime: ModelRuntime, n: int) -> list[int]:
    """``n`` token ids (which ones changes no cost)."""
    vocab = runtime.vocab_size
    return [(100 + i) % vocab for i in range(n)]


def _sync(device: torch.device) -> None:
    """Wait for the GPU's queued work, so that a time holds the forward's own."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
