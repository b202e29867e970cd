"""Recently touched files in chunks on a fixed line grid, and the chunks most like the cursor's
text by the Jaccard similarity of their identifiers (as Copilot and llama.vim do)."""
from __future__ import annotations

import re
from collections import OrderedDict
from dataclasses import dataclass
from typing import Callable

STICKY = 0.1                                  # the last choice's bonus
_IDENT = re.compile(r"[A-Za-z_]\w{2,}")      # names of three characters or more
_KEYWORDS = frozenset({"def", "class", "return", "import", "from", "self", "for", "while",
                       "not", "and", "None", "True", "False", "else", "elif", "try",
                       "except", "with", "yield", "lambda", "pass", "raise", "assert"})


@dataclass(frozen=True)
class Chunk:
    key: str                     # the file's key (its URI)
    path: str                    # the file's workspace-relative path
    start: int                   # first line (0-based)
    text: str                    # whole lines, each ending in \n
    score: float = 0.0


def identifiers(text: str) -> frozenset[str]:
    return frozenset(_IDENT.findall(text)) - _KEYWORDS


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 0.0


@dataclass
class _File:
    path: str
    text: Callable[[], str]      # the file's current text
    cut: tuple[str, list[tuple[Chunk, frozenset[str]]]] | None = None


class RecentFiles:
    """A ring of at most ``capacity`` files, the most recently touched last."""

    def __init__(self, capacity: int = 20, chunk_lines: int = 16):
        self.capacity = capacity
        self.chunk_lines = chunk_lines
        self._files: OrderedDict[str, _File] = OrderedDict()

    def touch(self, key: str, path: str, text: Callable[[], str]) -> None:
        """``key`` was opened or edited; ``text()`` reads its current text."""
        self._files.pop(key, None)
        self._files[key] = _File(path, text)
        while len(self._files) > self.capacity:
            self._files.popitem(last=False)

    def forget(self, key: str) -> None:
        self._files.pop(key, None)

    def __len__(self) -> int:
        return len(self._files)

    def similar(self, query: str, exclude: str, limit: int, floor: float = 0.1,
                sticky: frozenset[tuple[str, int]] = frozenset()) -> list[Chunk]:
        """The ``limit`` chunks (not of ``exclude``) most like ``query`` at ``floor`` or more, best
        first; ``sticky`` (path, start) chunks get a bonus, lest a near tie change the choice."""
        want = identifiers(query)
        if not want:
            return []
        scored = []
        for key, f in list(self._files.items()):
            if key == exclude:
                continue
            for chunk, names in self._chunks(key, f):
                score = jaccard(want, names) + (STICKY if (f.path, chunk.start) in sticky else 0.0)
                if score >= floor:
                    scored.append((score, chunk))
        scored.sort(key=lambda s: (-s[0], s[1].path, s[1].start))
        return [Chunk(c.key, c.path, c.start, c.text, round(s, 4)) for s, c in scored[:limit]]

    def _chunks(self, key: str, f: _File) -> list[tuple[Chunk, frozenset[str]]]:
        text = f.text()
        if f.cut is None or f.cut[0] is not text:
            lines = text.split("\n")
            n = self.chunk_lines
            chunks = []
            for start in range(0, len(lines), n):
                body = "\n".join(lines[start:start + n]).rstrip("\n")
                if body.strip():
                    chunks.append((Chunk(key, f.path, start, body + "\n"), identifiers(body)))
            f.cut = (text, chunks)
        return f.cut[1]
