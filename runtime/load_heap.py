"""glibc's heap while a model is read: each weight's float temporaries (a chunk of rows being
quantized, a tensor being cast) are megabytes, freed at once, and glibc's heap would keep
most of them, so that a lean load's resident set stayed about twice its weights. While
reading, allocations of MMAP_WHILE_READING or more are mapped and unmapped by themselves;
after, the threshold is the one glibc's own adjustment settles at, and what the heap kept is
given back (docs/decisions/lean-weights.md); ``give_back`` does the same after the other
passes of a start. Elsewhere than glibc nothing changes."""
from __future__ import annotations

import ctypes
import ctypes.util
from contextlib import contextmanager
from typing import Iterator

M_MMAP_THRESHOLD = -3                  # glibc's mallopt parameter
MMAP_WHILE_READING = 1 << 20
MMAP_AFTER = 32 << 20                  # glibc's DEFAULT_MMAP_THRESHOLD_MAX on 64-bit


def _glibc():
    """glibc's handle, or None elsewhere (musl, macOS, Windows)."""
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
    except OSError:
        return None
    return libc if libc is not None and hasattr(libc, "malloc_trim") else None


def give_back() -> None:
    """Return to the system what the heap holds free: after a start's large passes (the
    tokenizer's parse, the vocabulary's index), whose freed memory glibc would keep."""
    libc = _glibc()
    if libc is not None:
        libc.malloc_trim(0)


@contextmanager
def reading_weights() -> Iterator[None]:
    """Within: large temporaries mapped on their own; after: the heap trimmed."""
    libc = _glibc()
    if libc is not None:
        libc.mallopt(M_MMAP_THRESHOLD, MMAP_WHILE_READING)
    try:
        yield
    finally:
        if libc is not None:
            libc.mallopt(M_MMAP_THRESHOLD, MMAP_AFTER)
            libc.malloc_trim(0)
