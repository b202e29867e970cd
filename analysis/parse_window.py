"""The part of a Python document a syntax check at one cursor parses: the cursor's statement,
the next, and the headers of the classes around them, as a short text that parses as the whole
document does there, so a guard check pays for the statement, not the file. None (parse the
whole document) where a statement outside it has an error: docs/decisions/syntax-guard.md.
"""
from __future__ import annotations

from dataclasses import dataclass

_CLASS = "class_definition"


@dataclass(frozen=True)
class Window:
    """``text``: class headers, then the document's bytes ``start``..``end``; ``offset``: the cursor
    in ``text`` (characters); ``indent``: the window's block's indentation."""
    text: str
    offset: int
    start: int
    end: int
    indent: int = 0

    def keeps(self, draft: str) -> bool:
        """Whether the window can judge ``draft``: no line left of its block (that closes blocks
        it does not hold) and no ``__future__`` import (which depends on all before it)."""
        if "__future__" in draft:
            return False
        if not self.indent:
            return True
        head = self.text[self.text.rfind("\n", 0, self.offset) + 1:self.offset]
        lines = draft.split("\n")
        if not head.strip() and lines[0].strip() and _indent(head + lines[0]) < self.indent:
            return False
        return all(_indent(line) >= self.indent for line in lines[1:] if line.strip())


def statement_window(root, data: bytes, at: int) -> Window | None:
    """The window around byte ``at`` of ``data`` (the document, UTF-8), given its tree's
    ``root``; None where the whole document must be parsed."""
    headers: list[bytes] = []
    block = root
    while True:
        first, last = _statements_around(block, at)
        if first is None or block.has_error and _error_outside(block, first, last):
            return None
        body = _class_body(first, at)
        if body is None:
            break
        header = _line_start(data, first.start_byte), _line_start(data, body.start_byte)
        headers.append(data[header[0]:header[1]])
        block = body
    start = _line_start(data, min(first.start_byte, at))
    indent = _indent(data[start:first.start_byte].decode("utf-8", "surrogatepass")) \
        if headers else 0
    end = _line_end(data, max(last.end_byte, at))
    if not headers and start == 0 and end == len(data):
        return None                     # all of it
    prefix = b"".join(headers).decode("utf-8", "surrogatepass")
    before = data[start:at].decode("utf-8", "surrogatepass")
    text = prefix + data[start:end].decode("utf-8", "surrogatepass")
    return Window(text, len(prefix) + len(before), start, end, indent)


def _statements_around(block, at: int):
    """(the statement holding byte ``at`` or last before it, back over comments; the next one
    that is no comment), or (None, None); bisects ``block.child(k)``, since ``children`` is
    slow to build."""
    n = block.child_count
    if not n:
        return None, None
    lo, hi = 0, n                       # the first child that starts at or after ``at``
    while lo < hi:
        mid = (lo + hi) // 2
        if block.child(mid).start_byte < at:
            lo = mid + 1
        else:
            hi = mid
    i = max(0, lo - 1)
    while i > 0 and block.child(i).type == "comment":
        i -= 1
    j = min(i + 1, n - 1)
    while j < n - 1 and block.child(j).type == "comment":
        j += 1
    return block.child(i), block.child(j)


def _error_outside(block, first, last) -> bool:
    """An error in a statement of ``block`` before ``first`` or after ``last``."""
    kids = block.children
    i, j = kids.index(first), kids.index(last)
    return any(k.has_error for k in kids[:i]) or any(k.has_error for k in kids[j + 1:])


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def _class_body(node, at: int):
    """The body of class ``node`` (decorated or not) when ``at`` is in it below the header."""
    if node.type == "decorated_definition":
        node = node.child_by_field_name("definition")
    if node is None or node.type != _CLASS or node.has_error and _header_has_error(node):
        return None
    body = node.child_by_field_name("body")
    if body is None or body.type != "block" or not body.child_count or \
            body.start_point.row <= node.start_point.row or \
            not body.start_byte <= at < node.end_byte:
        return None
    return body


def _header_has_error(node) -> bool:
    """An error in a class's header (its name, bases or colon), not in its body."""
    return any(k.has_error or k.is_error or k.is_missing for k in node.children
               if k.type != "block")


def _line_start(data: bytes, at: int) -> int:
    return data.rfind(b"\n", 0, at) + 1


def _line_end(data: bytes, at: int) -> int:
    end = data.find(b"\n", at)
    return len(data) if end < 0 else end + 1
