"""One edit of a document's text, in character offsets, and its tree-sitter form."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TextEdit:
    """``old_text[start:old_end]`` was replaced; the new text is ``new_text[start:new_end]``.

    Offsets count Python characters (code points), as ``str`` indexes do.
    """
    start: int
    old_end: int
    new_end: int

    @staticmethod
    def between(old: str, new: str) -> "TextEdit":
        """The smallest single edit turning ``old`` into ``new`` (common head and tail kept)."""
        head = common_prefix_length(old, new)
        limit = min(len(old), len(new)) - head
        tail = common_suffix_length(old, new, limit)
        return TextEdit(head, len(old) - tail, len(new) - tail)

    def tree_sitter_args(self, old: str, new: str) -> dict:
        """Keyword arguments for ``Tree.edit`` (bytes and (row, byte column) points)."""
        start_byte, start_point = byte_and_point(old, self.start)
        old_end_byte, old_end_point = byte_and_point(old, self.old_end)
        new_end_byte, new_end_point = byte_and_point(new, self.new_end)
        return dict(start_byte=start_byte, old_end_byte=old_end_byte, new_end_byte=new_end_byte,
                    start_point=start_point, old_end_point=old_end_point,
                    new_end_point=new_end_point)


def common_prefix_length(a: str, b: str) -> int:
    """Length of the common prefix, by bisection over slices (C-speed comparisons)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def common_suffix_length(a: str, b: str, limit: int) -> int:
    """Length of the common suffix, at most ``limit``."""
    lo, hi = 0, max(0, limit)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[len(a) - mid:len(a) - lo] == b[len(b) - mid:len(b) - lo]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def byte_offset(text: str, offset: int) -> int:
    """The UTF-8 byte offset of character ``offset``."""
    if text.isascii():
        return offset
    return len(text[:offset].encode("utf-8"))


def byte_and_point(text: str, offset: int) -> tuple[int, tuple[int, int]]:
    """(byte offset, (row, byte column)) of character ``offset`` in ``text``."""
    row = text.count("\n", 0, offset)
    line_start = text.rfind("\n", 0, offset) + 1
    column = byte_offset(text[line_start:offset], offset - line_start)
    return byte_offset(text, offset), (row, column)
