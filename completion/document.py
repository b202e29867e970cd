"""An open text document addressed with LSP positions (zero-based lines, UTF-16 code units)."""
from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass

from inkling.completion.edit_extent import EditExtent
from inkling.completion.errors import DocumentError

_LINE_BREAK = re.compile(r"\r\n|\r|\n")


@dataclass(frozen=True)
class Position:
    line: int
    character: int


@dataclass(frozen=True)
class Range:
    start: Position
    end: Position


@dataclass(frozen=True)
class TextChange:
    """An LSP content change: ``range`` None replaces the whole text."""
    text: str
    range: Range | None = None


def utf16_len(s: str) -> int:
    if s.isascii():
        return len(s)
    return len(s) + sum(1 for c in s if ord(c) > 0xFFFF)


def utf16_to_index(line: str, character: int) -> int:
    """Index into ``line`` of a UTF-16 column; raises ValueError when it does not fit."""
    if line.isascii():
        if character > len(line):
            raise ValueError(f"character {character} is past the end of the line "
                             f"({len(line)} UTF-16 units)")
        return character
    units = 0
    for i, c in enumerate(line):
        if units == character:
            return i
        units += 2 if ord(c) > 0xFFFF else 1
        if units > character:
            raise ValueError(f"character {character} splits a UTF-16 surrogate pair")
    if units == character:
        return len(line)
    raise ValueError(f"character {character} is past the end of the line ({units} UTF-16 units)")


class Document:
    def __init__(self, uri: str, text: str, version: int = 0, language_id: str = "python"):
        self.uri = uri
        self.language_id = language_id
        self.version = version
        # text and its line starts (None until asked for) change together: one attribute,
        # so a reader on another thread never pairs new text with old line starts
        self._state: tuple[str, list[int] | None] = (text, None)

    @property
    def _text(self) -> str:
        return self._state[0]

    @property
    def text(self) -> str:
        return self._state[0]

    @property
    def line_starts(self) -> list[int]:
        """Offsets where each line begins (\\n, \\r\\n and \\r end lines, as in LSP)."""
        text, starts = self._state
        if starts is None:
            starts = [0] + [m.end() for m in _LINE_BREAK.finditer(text)]
            self._state = (text, starts)
        return starts

    def snapshot(self) -> "Document":
        """A copy that later changes do not touch (for work on another thread)."""
        copy = Document(self.uri, "", self.version, self.language_id)
        copy._state = self._state
        return copy

    @property
    def line_count(self) -> int:
        return len(self.line_starts)

    @property
    def eol(self) -> str:
        m = _LINE_BREAK.search(self._text)
        return m.group(0) if m else "\n"

    def line_text(self, line: int) -> str:
        """The line without its line break."""
        starts = self.line_starts
        end = starts[line + 1] if line + 1 < len(starts) else len(self._text)
        return self._text[starts[line]:end].rstrip("\r\n")

    def offset_at(self, pos: Position) -> int:
        if pos.line < 0 or pos.character < 0:
            raise DocumentError(f"{self.uri}: negative position {pos.line}:{pos.character}")
        if pos.line >= self.line_count:
            raise DocumentError(f"{self.uri}: line {pos.line} is out of range "
                                f"(the document has {self.line_count} lines, counted from 0)")
        try:
            index = utf16_to_index(self.line_text(pos.line), pos.character)
        except ValueError as exc:
            raise DocumentError(f"{self.uri}: line {pos.line}: {exc}") from None
        return self.line_starts[pos.line] + index

    def position_at(self, offset: int) -> Position:
        line = bisect_right(self.line_starts, offset) - 1
        start = self.line_starts[line]
        return Position(line, utf16_len(self._text[start:offset]))

    def apply(self, changes: list[TextChange], version: int | None = None,
              extent: EditExtent | None = None) -> None:
        """Apply LSP changes in order, none if any is invalid; ``extent`` notes lines touched."""
        state = self._state
        touched = []
        try:
            for change in changes:
                if change.range is None:
                    self._set(change.text)
                    touched.append((0, 0))
                    continue
                a, b = self.offset_at(change.range.start), self.offset_at(change.range.end)
                if b < a:
                    raise DocumentError(
                        f"{self.uri}: range end {change.range.end.line}:{change.range.end.character}"
                        f" is before its start {change.range.start.line}:"
                        f"{change.range.start.character}")
                touched.append((change.range.start.line,
                                self.line_count - 1 - change.range.end.line))
                self._set(self._text[:a] + change.text + self._text[b:])
        except DocumentError:
            self._state = state
            raise
        if extent is not None:
            for first, below in touched:
                extent.note(first, below)
        if version is not None:
            self.version = version

    def _set(self, text: str) -> None:
        self._state = (text, None)
