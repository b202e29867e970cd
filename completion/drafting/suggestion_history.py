"""A document's recent suggestions, each after its prompt's last tokens, as a drafting source:
between keystrokes the model's greedy continuation rarely changes."""
from __future__ import annotations

from collections import deque

from inkling.completion.drafting.suffix_index import Found, Match, StreamIndex


class SuggestionHistory:
    def __init__(self, keep: int = 8, context_tokens: int = 32):
        self._items: deque[list[int]] = deque(maxlen=keep)
        self.context_tokens = context_tokens
        self._index: StreamIndex | None = None

    def __len__(self) -> int:
        return len(self._items)

    def add(self, prefix_ids: list[int], generated: list[int]) -> None:
        """A suggestion (``generated``) made after ``prefix_ids``."""
        if not generated:
            return
        self._items.append(list(prefix_ids[-self.context_tokens:]) + list(generated))
        self._index = None

    def _stream(self) -> StreamIndex | None:
        if self._items and self._index is None:   # newest last: continuations keep recency
            self._index = StreamIndex.of(list(self._items), layout="hashed")
        return self._index if self._items else None

    def matches(self, context: list[int]) -> list[tuple[StreamIndex, Match]]:
        stream = self._stream()
        return [(stream, m) for m in stream.matches(context)] if stream is not None else []

    def found(self, context: list[int]) -> list[Found]:
        stream = self._stream()
        return stream.found(context) if stream is not None else []
