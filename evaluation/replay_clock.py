"""The replay's clock: traces record what was typed, not when, so an assumed typist gives the
quiet before each event, and the idle policy runs where the server's timer would fire.

Each character takes ``keystroke_ms``, a line end adds ``line_pause_ms``, a request follows its
keystroke at once, and other events take no time."""
from __future__ import annotations

from dataclasses import dataclass

from inkling.evaluation.trace_file import ChangeEvent, Event

KEYSTROKE_MS = 150.0
LINE_PAUSE_MS = 2000.0    # after a line is typed, before the next keystroke


@dataclass
class ReplayClock:
    keystroke_ms: float = KEYSTROKE_MS
    line_pause_ms: float = LINE_PAUSE_MS
    _line_ended: bool = False        # the last change typed a line end

    def quiet_before(self, event: Event) -> float:
        """Milliseconds of quiet before ``event`` (its first keystroke, for a change)."""
        if not isinstance(event, ChangeEvent):
            return 0.0
        quiet = self.keystroke_ms + (self.line_pause_ms if self._line_ended else 0.0)
        typed = "".join(c.text for c in event.changes)
        self._line_ended = typed.endswith("\n")
        return quiet
