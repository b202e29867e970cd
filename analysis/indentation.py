"""A line's indentation, the one measure the analysis (enclosing definitions) and the
stop rules (where a block ends) share."""
from __future__ import annotations


def indent_width(line: str) -> int:
    """The leading spaces and tabs of ``line``, counted as characters."""
    return len(line) - len(line.lstrip(" \t"))
