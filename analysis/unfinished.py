"""What a draft leaves open: the text that would close the string and the brackets it
opens and does not close (``foo("abc`` -> ``")``). A draft is a prefix of the line the
person goes on typing; one that stops inside a call or a docstring it opened is
unfinished, not wrong. The syntax guard judges the draft with these closers after it, so
that it cuts a draft at its first fault, never where the line merely goes on."""
from __future__ import annotations

import re

from inkling.analysis.python_scanner import ScanState

_CLOSE = {"(": ")", "[": "]", "{": "}"}
_AFTER_CLOSE = re.compile(r"(?<=[)\]}])")      # split points: after each closing bracket


def closers(scan: ScanState, draft: str) -> str:
    """The text that closes what ``draft``, typed where the scanner is in state ``scan``
    (the cursor's), opens and leaves open: its open string's quote, then its brackets,
    innermost first. "" when it leaves nothing of its own open (a bracket or a string
    open at the cursor is the document's, not the draft's)."""
    s, low = scan, len(scan.frames)
    for piece in _AFTER_CLOSE.split(draft):    # the fewest brackets open: after a close
        s = s.advance(piece)
        low = min(low, len(s.frames))
    return _string_closer(scan, s, draft) + "".join(_CLOSE[f.opener]
                                                    for f in reversed(s.frames[low:]))


def _string_closer(cursor: ScanState, end: ScanState, draft: str) -> str:
    """The quote that ends the string ``draft`` opened and left open ("" when it ends in
    code, in a comment, or still in the string the cursor is in)."""
    if end.pending:                            # one quote: a string opened; two: closed
        return end.pending if len(end.pending) == 1 else ""
    if end.mode != "string":
        return ""
    if cursor.mode == "string" and end.quote == cursor.quote and cursor.quote not in draft:
        return ""
    return ("_" if end.escape else "") + end.quote   # an escape takes one character first
