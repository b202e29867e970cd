"""Adaptive debounce: automatic triggers wait about as long as the user's typing interval
(docs/decisions/typing-cadence.md)."""
from __future__ import annotations

import statistics
import time
from collections import deque

PAUSE_S = 1.0   # gaps longer than this are pauses, not typing


class TypingCadence:
    def __init__(self, window: int = 8):
        self._last: dict[str, float] = {}
        self._intervals: dict[str, deque] = {}
        self._window = window

    def keystroke(self, uri: str, now: float | None = None) -> None:
        now = time.monotonic() if now is None else now
        last = self._last.get(uri)
        self._last[uri] = now
        if last is not None and now - last < PAUSE_S:
            self._intervals.setdefault(uri, deque(maxlen=self._window)).append(now - last)

    def delay_s(self, uri: str, min_ms: int, max_ms: int, factor: float) -> float:
        """How long an automatic trigger waits: ``factor`` typing intervals, clamped."""
        intervals = self._intervals.get(uri)
        if not intervals:
            return min_ms / 1000
        wait = statistics.median(intervals) * factor
        return min(max(wait, min_ms / 1000), max_ms / 1000)

    def forget(self, uri: str) -> None:
        self._last.pop(uri, None)
        self._intervals.pop(uri, None)
