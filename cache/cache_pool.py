"""Prompt caches of several documents, least recently used first out, within a byte budget."""
from __future__ import annotations

from collections import OrderedDict
from typing import Callable, Generic, TypeVar

T = TypeVar("T")


class CachePool(Generic[T]):
    def __init__(self, budget_bytes: int, size_of: Callable[[T], int]):
        self.budget_bytes = budget_bytes
        self._size_of = size_of
        self._items: OrderedDict[str, T] = OrderedDict()
        self.evictions = 0

    def get(self, key: str, make: Callable[[], T]) -> T:
        """The cache for ``key`` (made if absent), now the most recently used."""
        item = self._items.pop(key, None)
        if item is None:
            item = make()
        self._items[key] = item
        return item

    def trim(self) -> None:
        """Drop least recently used caches until the pool fits its budget (the newest stays)."""
        while len(self._items) > 1 and self.nbytes() > self.budget_bytes:
            self._items.popitem(last=False)
            self.evictions += 1

    def nbytes(self) -> int:
        return sum(self._size_of(item) for item in self._items.values())

    def most_recent(self) -> T | None:
        return next(reversed(self._items.values()), None)

    def discard(self, key: str) -> None:
        self._items.pop(key, None)

    def clear(self) -> None:
        self._items.clear()

    def __len__(self) -> int:
        return len(self._items)

    def keys(self) -> list[str]:
        return list(self._items)
