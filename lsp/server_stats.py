"""The server's `inkling/stats` counters, and what it says of the forward, threads and drafting."""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import math

from inkling.completion.drafting.draft_mode import in_use
from inkling.completion.model_report import model_description


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (0..100) with linear interpolation between ranks (numpy's default)."""
    if not values:
        raise ValueError("percentile of no values")
    if not 0 <= q <= 100:
        raise ValueError(f"percentile q must be within 0..100, got {q}")
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100
    low, high = math.floor(rank), math.ceil(rank)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


@dataclass
class ServerStats:
    requests: int = 0
    cancelled: int = 0
    answered: int = 0
    accepted: int = 0
    errors: int = 0
    latencies_ms: deque = field(default_factory=lambda: deque(maxlen=2000))

    def as_dict(self) -> dict:
        lat = list(self.latencies_ms)
        return {"requests": self.requests, "cancelled": self.cancelled,
                "answered": self.answered, "accepted": self.accepted, "errors": self.errors,
                "latency_ms": {"p50": _round(percentile(lat, 50)) if lat else None,
                               "p95": _round(percentile(lat, 95)) if lat else None,
                               "count": len(lat)}}


def forward_in_use(engine) -> dict | None:
    """The forward completions run, model.forward resolved: {"kind": native | compact |
    reference, "note": why auto is not native, or ""}; None before the model loads."""
    if not engine.model_loaded:
        return None
    rt, asked = engine.load_model(), engine.options.model.forward
    kind = rt.forward_kind(asked)
    return {"kind": kind, "note": "" if asked != "auto" or kind == "native" else rt.auto_note()}


def threads_in_use(engine) -> dict | None:
    """The forward's CPU threads (``ThreadChoice.report``); None unloaded or on a GPU."""
    rt = engine.load_model() if engine.model_loaded else None
    return rt.threads.report() if rt is not None and rt.threads is not None else None


def drafting_in_use(engine) -> dict | None:
    """The drafting that runs and why (``draft_mode.in_use``); None before the model loads.
    See docs/decisions/drafting-by-device.md."""
    if not engine.model_loaded:
        return None
    return in_use(engine.options, engine.load_model(), engine.acceptance.prior)


def model_in_use(engine) -> dict | None:
    """What the load chose (``ModelDescription.as_dict``); None before the model loads."""
    if not engine.model_loaded:
        return None
    return model_description(engine.options, engine.load_model(),
                             engine.acceptance.prior).as_dict()


def _round(v):
    return None if v is None else round(v, 1)
