"""Where the statement holding a cursor starts, from the tree (for scanning it lexically)."""
from __future__ import annotations

from inkling.analysis.cursor_scope import enclosing_headers
from inkling.analysis.text_edit import byte_offset

MAX_SCAN_CHARS = 50_000
_CONTAINERS = ("module", "block", "program", "source_file", "statement_block",
               "declaration_list", "class_body", "compound_statement")


def statement_start(root, text: str, offset: int) -> int:
    """The character offset to scan from so that the scan reaches ``offset`` with the right
    brackets and string state: the start of the innermost statement holding the character
    before the cursor (or of the cursor's line), at most ``MAX_SCAN_CHARS`` back."""
    line_start = text.rfind("\n", 0, offset) + 1
    last = len(text[max(0, offset - MAX_SCAN_CHARS):offset].rstrip()) + max(0, offset -
                                                                           MAX_SCAN_CHARS)
    if root is None or last == 0:
        return line_start
    b = byte_offset(text, offset)
    at = byte_offset(text, last - 1)             # the last non-blank character before
    node = root.descendant_for_byte_range(at, at)
    while node is not None and node.parent is not None and node.parent.type not in _CONTAINERS:
        node = node.parent
    if node is None or node.type in _CONTAINERS or node.start_byte >= b:
        return line_start
    start = _char_offset(text, node.start_byte, b, offset)
    start = text.rfind("\n", 0, start) + 1
    return start if offset - start <= MAX_SCAN_CHARS else line_start


def _char_offset(text: str, byte: int, cursor_byte: int, cursor: int) -> int:
    """The character offset of ``byte`` (before the cursor)."""
    if text.isascii():
        return byte
    return len(text.encode("utf-8", "surrogatepass")[:byte].decode("utf-8", "ignore"))


def scan_start(root, text: str, offset: int, max_chars: int = 20_000, headers=None) -> int:
    """Where to scan from to know the lexical state at ``offset``: the statement's start,
    unless a triple-quoted string opens between the innermost enclosing ``def``/``class``
    line and it (a docstring still being typed leaves the tree no string to see): then
    that line, when it is near."""
    start = statement_start(root, text, offset)
    if headers is None:
        headers = enclosing_headers(text, offset, root)
    if not headers or headers[-1].start >= start or offset - headers[-1].start > max_chars:
        return start
    between = text[headers[-1].start:start]
    if between.count('"""') % 2 == 0 and between.count("'''") % 2 == 0:
        return start
    return headers[-1].start
