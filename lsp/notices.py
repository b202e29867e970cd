"""Popups for what a user must act on, each distinct message at most once an interval, so a
fault every keystroke repeats is one popup; every message still goes to the log."""
from __future__ import annotations

import time
from typing import Callable


class Notices:
    def __init__(self, show: Callable[[str], None], interval_s: float = 60.0,
                 clock: Callable[[], float] = time.monotonic):
        self._show = show
        self._interval_s = interval_s
        self._clock = clock
        self._last: dict[str, float] = {}     # message -> when it was last shown

    def show(self, message: str) -> bool:
        """Show ``message`` unless it was shown in the last interval; True when shown."""
        now = self._clock()
        last = self._last.get(message)
        if last is not None and now - last < self._interval_s:
            return False
        self._last[message] = now
        if len(self._last) > 256:              # forget the oldest (a bounded memory)
            for key in sorted(self._last, key=self._last.get)[:128]:
                del self._last[key]
        self._show(message)
        return True
