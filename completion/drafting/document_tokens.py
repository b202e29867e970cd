"""A document's token ids, tokenized a paragraph at a time so that an edit re-tokenizes only what
it touched (ids may differ from the whole text's at blank lines, never inside a paragraph)."""
from __future__ import annotations

import re
from typing import Callable

_PARAGRAPH = re.compile(r".*?(?:\n[ \t]*\n|\Z)", re.S)


def paragraphs(text: str) -> list[str]:
    """``text`` cut after each blank line; the pieces join back to ``text``."""
    out = [m.group(0) for m in _PARAGRAPH.finditer(text) if m.group(0)]
    return out


class DocumentTokens:
    def __init__(self, encode: Callable[[str], list[int]], max_remembered: int = 20_000):
        self.encode = encode
        self.max_remembered = max_remembered
        self._ids: dict[str, list[int]] = {}

    def ids(self, text: str) -> list[int]:
        out: list[int] = []
        pieces = paragraphs(text)
        if len(self._ids) + len(pieces) > self.max_remembered:
            self._ids.clear()
        for piece in pieces:
            ids = self._ids.get(piece)
            if ids is None:
                ids = self._ids[piece] = self.encode(piece)
            out.extend(ids)
        return out
