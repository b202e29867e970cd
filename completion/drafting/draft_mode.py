"""Which drafting ``completion.draft auto`` runs: ``suffix`` where a forward of the drafter's
prior tree costs less, in one-row forwards, than the tokens it is expected to yield, else
``none`` (docs/decisions/drafting-by-device.md). The forwards are timed once per machine,
model, forward, dtype and threads and kept in the user cache; where nothing is kept yet a
load that may not wait (``inkling complete``) drafts nothing and says so; the server times
it once ready, a round per job between completions (``measuring``), and the replay measures."""
from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from enum import StrEnum
from typing import Generator, Iterator

import torch

from inkling.cache.modes import CacheMode
from inkling.cache.prompt_cache import PromptCache
from inkling.runtime.model_runtime import ModelRuntime
from inkling.runtime.native_build import cpu_features
from inkling.runtime.user_cache import (cache_folder, digest, machine_fingerprint, read_record,
                                        weights_fingerprint, write_record)

from inkling.completion.decoding.names import DraftMode

TREE_ROWS = (8, 16)      # the tree sizes the suffix drafter verifies (rows, root included)
PRIOR_ROWS = 16          # the row bucket of its tree at the meter's prior (AcceptanceMeter.limits)
CONTEXT = 512            # cached tokens before the timed rows: a typical prompt's length
ROUNDS = 5               # timed rounds (after one to warm up); the median is kept
RECORD_VERSION = 1       # of the cached timings' key and body


class DraftState(StrEnum):
    MEASURED = "measured"                    # timed by this process
    CACHED = "cached"                        # an earlier load's timing, read back untimed
    NOT_MEASURED = "not measured yet"        # nothing timed: auto drafts nothing meanwhile


@dataclass(frozen=True)
class DraftChoice:
    mode: DraftMode               # what auto runs: suffix or none
    reason: str                   # why, with the figures
    forward: str                  # the forward measured: native | compact | reference
    ms: dict[int, float]          # rows -> ms of one forward after CONTEXT cached tokens
    state: DraftState = DraftState.MEASURED

    def report(self) -> dict:
        """What ``inkling/stats`` and the replay's config say of it."""
        return {"mode": self.mode, "reason": self.reason, "forward": self.forward,
                "state": self.state, "rows": list(self.ms),
                "forward_ms": [round(ms, 3) for ms in self.ms.values()]}


def resolved(options, runtime: ModelRuntime, prior: float, measure: bool = False) -> DraftMode:
    """``completion.draft`` of ``options`` (InklingOptions) as it runs: ``auto`` as kept or
    cached, else measured now where ``measure``, else none (not measured yet)."""
    mode = DraftMode(options.completion.draft)
    if mode != DraftMode.AUTO:
        return mode
    forward = options.model.forward
    return (choice_for if measure else known)(runtime, forward, prior).mode


def in_use(options, runtime: ModelRuntime, prior: float) -> dict:
    """``inkling/stats``'s drafting: ``DraftChoice.report`` with "mode" (what runs) and "asked"."""
    asked = options.completion.draft
    about = known(runtime, options.model.forward, prior).report()
    if asked != DraftMode.AUTO:
        about["reason"] = f"completion.draft is {asked}"
    return {**about, "mode": resolved(options, runtime, prior), "asked": asked}


def choice_for(runtime: ModelRuntime, forward: str, prior: float) -> DraftChoice:
    """The choice for ``runtime``'s ``forward``: kept or cached, else measured now (and
    cached for the next load)."""
    found = known(runtime, forward, prior)
    if found.state != DraftState.NOT_MEASURED:
        return found
    return _kept(runtime, found.forward, forward_ms(runtime, forward), prior)


def measuring(runtime: ModelRuntime, forward: str,
              prior: float) -> Iterator[DraftChoice | None]:
    """``choice_for`` a round of forwards at a time: None after each round, then the choice.
    The server runs one step per model-worker job, so a completion queued meanwhile waits for
    one round at most, never for the whole timing."""
    found = known(runtime, forward, prior)
    if found.state == DraftState.NOT_MEASURED:
        ms = yield from timed_rounds(runtime, forward)
        found = _kept(runtime, found.forward, ms, prior)
    yield found


def _kept(runtime: ModelRuntime, kind: str, ms: dict[int, float], prior: float) -> DraftChoice:
    """The choice ``ms`` makes, kept with ``runtime`` and cached where ``plausible``."""
    key = _record_key(runtime, kind)
    if key is not None and plausible(ms):
        write_record(_record_path(key), key, {"ms": {str(r): v for r, v in ms.items()}})
    found = runtime.attached[("draft_choice", kind)] = choose(ms, prior, kind)
    return found


def known(runtime: ModelRuntime, forward: str, prior: float) -> DraftChoice:
    """The choice kept with ``runtime``, else decided from a cached timing (no forward run),
    else a ``NOT_MEASURED`` choice of none."""
    kind = runtime.forward_kind(forward)
    found = runtime.attached.get(("draft_choice", kind))
    if found is not None:
        return found
    key = _record_key(runtime, kind)
    ms = _cached_ms(key) if key is not None else None
    if ms is None:
        return DraftChoice(DraftMode.NONE, "completion.draft auto: what drafting costs is not "
                           f"measured yet for this model and forward ({kind}) here, so it does "
                           "not draft; the server times it once ready, and keeps it",
                           kind, {}, DraftState.NOT_MEASURED)
    found = runtime.attached[("draft_choice", kind)] = choose(ms, prior, kind,
                                                              DraftState.CACHED)
    return found


def plausible(ms: dict[int, float]) -> bool:
    """Whether a timing may be kept for later loads: a one-row forward that cost over twice
    the widest tree's was slowed by something else (a busy machine), so it decides this load
    only."""
    return ms[1] <= 2 * ms[max(ms)]


def choose(ms: dict[int, float], prior: float, forward: str,
           state: DraftState = DraftState.MEASURED) -> DraftChoice:
    """``suffix`` where PRIOR_ROWS rows cost under 1 + ``prior`` one-row forwards, else ``none``."""
    rows, tokens = PRIOR_ROWS, 1 + prior
    ratio = ms[rows] / ms[1]
    costs = f"a forward of {rows} rows costs {ms[rows]:.2f} ms, {ratio:.2f} one-row " \
            f"forwards of {ms[1]:.2f} ms ({forward})"
    if ratio < tokens:
        return DraftChoice(DraftMode.SUFFIX, f"{costs}: under the {tokens:.1f} tokens a verified "
                           "tree is expected to yield, so drafting pays", forward, ms, state)
    return DraftChoice(DraftMode.NONE, f"{costs}: not under the {tokens:.1f} tokens a verified "
                       "tree is expected to yield, so drafting would cost latency", forward, ms,
                       state)


def _record_key(runtime: ModelRuntime, kind: str) -> dict | None:
    """What decides the timing of ``kind`` on ``runtime`` (kept with it); None where the
    model's files cannot be read, so nothing is cached."""
    found = runtime.attached.get(("draft_key", kind))
    if found is None:
        try:
            weights = weights_fingerprint(runtime.path)
        except OSError:
            return None
        device = runtime.device
        found = runtime.attached[("draft_key", kind)] = {
            "version": RECORD_VERSION, "model": str(runtime.path), "weights": weights,
            "forward": kind, "dtype": str(runtime.dtype), "device": str(device),
            "gpu": torch.cuda.get_device_name(device) if device.type == "cuda" else None,
            "threads": list(runtime.threads.counts) if runtime.threads else None,
            "torch": torch.__version__, "cpu": machine_fingerprint(cpu_features()),
            "timing": [PRIOR_ROWS, list(TREE_ROWS), CONTEXT, ROUNDS]}
    return found


def _record_path(key: dict):
    return cache_folder("drafting") / f"forward-ms-{digest(key)}.json"


def _cached_ms(key: dict) -> dict[int, float] | None:
    """rows -> ms cached under ``key``; None where none is, or it does not hold every row."""
    body = read_record(_record_path(key), key)
    try:
        ms = {int(r): float(v) for r, v in body["ms"].items()}
    except (TypeError, KeyError, ValueError, AttributeError):
        return None
    rows = {1, *TREE_ROWS}
    return ms if set(ms) == rows and all(v > 0 for v in ms.values()) else None


def forward_ms(runtime: ModelRuntime, forward: str, rows: tuple[int, ...] = (1, *TREE_ROWS),
               context: int = CONTEXT, rounds: int = ROUNDS) -> dict[int, float]:
    """rows -> median ms of a forward of that many chained rows after ``context`` cached tokens."""
    steps = timed_rounds(runtime, forward, rows, context, rounds)
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return done.value


def timed_rounds(runtime: ModelRuntime, forward: str, rows: tuple[int, ...] = (1, *TREE_ROWS),
                 context: int = CONTEXT, rounds: int = ROUNDS
                 ) -> Generator[None, None, dict[int, float]]:
    """``forward_ms`` as steps: yields after the context's prefill and after each round,
    returns rows -> median ms."""
    n = max(1, min(context, runtime.context_limit - max(rows) - 1))
    cache = PromptCache(runtime, CacheMode.FULL, forward=forward)
    cache.extend(_filler(runtime, n), last_only=True)
    times: dict[int, list[float]] = {r: [] for r in rows}
    for round_ in range(rounds + 1):
        yield
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
