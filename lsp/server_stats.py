"""Counters the server reports through the `inkling/stats` request."""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from .metrics import percentile


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


def _round(v):
    return None if v is None else round(v, 1)
