"""The lines edited since a prompt cache last synced: a window edge in the untouched text above
or below moved without an edit, so the cache treats its change as a shift, not stale."""
from __future__ import annotations

from dataclasses import dataclass

UNTOUCHED = 1 << 62


@dataclass
class EditExtent:
    first_line: int = UNTOUCHED     # the first line an edit touched (in the text of the time)
    lines_below: int = UNTOUCHED    # the fewest lines below an edit's last line

    def note(self, first_line: int, lines_below: int) -> None:
        self.first_line = min(self.first_line, first_line)
        self.lines_below = min(self.lines_below, lines_below)

    def front_untouched(self, window_first_line: int) -> bool:
        """No edit on or above the window's first line."""
        return self.first_line > window_first_line

    def end_untouched(self, lines_below_window: int) -> bool:
        """No edit on or below the window's last line (``lines_below_window`` lines follow it)."""
        return self.lines_below > lines_below_window + 1
