"""The string literal a cursor is inside, by a lexical scan of the statement so far.

The tree cannot always say: a docstring still being typed, its closing quotes not there
yet, leaves tree-sitter no string to see (the rest of the file is one unterminated
string, recovered from somehow). The lexical scan from where the statement starts
(``scan_start``) knows. The scanner is Python's; other languages get "" (not known).
"""
from __future__ import annotations

from inkling.analysis.python_scanner import ScanState
from inkling.analysis.statement_start import scan_start

SCANNED_LANGUAGES = frozenset({"python"})


def string_quote(scan: ScanState) -> str:
    """The delimiter of the string ``scan`` ends inside, when it is a plain one (an
    f-string's braces hold code, which the scanner does not follow): "" otherwise. Right
    after one opening quote the string is open for any text that does not start with a
    quote (which would make it empty or triple-quoted); after two it is an empty one,
    closed."""
    if scan.formatted:
        return ""
    if scan.pending:
        return scan.pending if len(scan.pending) == 1 else ""
    return scan.quote if scan.mode == "string" else ""


def open_string_at(root, text: str, offset: int, language: str = "python") -> str:
    """The delimiter of the plain string literal the lexer is inside at character
    ``offset`` of ``text`` (``root``: its tree's root node), "" in code, in a comment, in
    an f-string or for a language without a scanner."""
    if language not in SCANNED_LANGUAGES:
        return ""
    start = scan_start(root, text, offset)
    return string_quote(ScanState().advance(text[start:offset]))
