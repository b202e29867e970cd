"""The string literal a cursor is inside, by a lexical scan of the statement so far: the tree
cannot see a docstring whose closing quotes are not typed yet. Python only; others get "".
"""
from __future__ import annotations

from inkling.analysis.python_scanner import ScanState
from inkling.analysis.statement_start import scan_start

SCANNED_LANGUAGES = frozenset({"python"})


def string_quote(scan: ScanState) -> str:
    """The delimiter of the plain (not f-) string ``scan`` ends inside, else ""."""
    if scan.formatted:
        return ""
    if scan.pending:
        return scan.pending if len(scan.pending) == 1 else ""
    return scan.quote if scan.mode == "string" else ""


def open_string_at(root, text: str, offset: int, language: str = "python") -> str:
    """The delimiter of the plain string open at character ``offset`` of ``text``, else ""."""
    if language not in SCANNED_LANGUAGES:
        return ""
    start = scan_start(root, text, offset)
    return string_quote(ScanState().advance(text[start:offset]))
