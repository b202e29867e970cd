"""What a draft leaves open (``foo("abc`` -> ``")``): the syntax guard judges a draft with these
closers after it, since a draft stopping inside a call it opened is unfinished, not wrong."""
from __future__ import annotations

import re

from inkling.analysis.python_scanner import ScanState

_CLOSE = {"(": ")", "[": "]", "{": "}"}
_AFTER_CLOSE = re.compile(r"(?<=[)\]}])")      # split points: after each closing bracket


def closers(scan: ScanState, draft: str) -> str:
    """The text closing what ``draft``, typed at state ``scan``, opens and leaves open: its
    string's quote, then its brackets innermost first; what was open at the cursor is not its."""
    s, low = scan, len(scan.frames)
    for piece in _AFTER_CLOSE.split(draft):    # the fewest brackets open: after a close
        s = s.advance(piece)
        low = min(low, len(s.frames))
    return _string_closer(scan, s, draft) + "".join(_CLOSE[f.opener]
                                                    for f in reversed(s.frames[low:]))


def _string_closer(cursor: ScanState, end: ScanState, draft: str) -> str:
    """The quote ending a string ``draft`` opened and left open, else ""."""
    if end.pending:                            # one quote: a string opened; two: closed
        return end.pending if len(end.pending) == 1 else ""
    if end.mode != "string":
        return ""
    if cursor.mode == "string" and end.quote == cursor.quote and cursor.quote not in draft:
        return ""
    return ("_" if end.escape else "") + end.quote   # an escape takes one character first
