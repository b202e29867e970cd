"""The replay's clock: traces record what was typed, not when, so the replay assumes a
typist and derives the quiet before each event from the trace's own typing. The idle
policy (``Engine.idle``: after ``cache.idle_refresh_ms`` of quiet, refresh the stale
cache) then runs where the server's timer would have fired for that typist.

The typist: each typed character takes ``keystroke_ms``; after typing a line end the
person pauses ``line_pause_ms`` (reading the suggestion, thinking) before the next
keystroke; a completion request comes right after the keystroke that triggered it (the
debounce); opening, closing, checking a document and files changing on disk take no
time of their own.
"""
from __future__ import annotations

from dataclasses import dataclass

from inkling.evaluation.trace_file import ChangeEvent, Event

KEYSTROKE_MS = 150.0      # about 80 words a minute
LINE_PAUSE_MS = 2000.0    # after a line is typed, before the next keystroke


@dataclass
class ReplayClock:
    keystroke_ms: float = KEYSTROKE_MS
    line_pause_ms: float = LINE_PAUSE_MS
    _line_ended: bool = False        # the last change typed a line end

    def quiet_before(self, event: Event) -> float:
        """Milliseconds without an edit or a request before ``event`` (its first
        keystroke, for a change)."""
        if not isinstance(event, ChangeEvent):
            return 0.0
        quiet = self.keystroke_ms + (self.line_pause_ms if self._line_ended else 0.0)
        typed = "".join(c.text for c in event.changes)
        self._line_ended = typed.endswith("\n")
        return quiet
