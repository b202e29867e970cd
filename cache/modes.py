"""How a document's KV cache is reused across edits, by name (torch-free: the options tree
and the command line name them without importing torch); cache/prompt_cache.py runs them.
A StrEnum, so each member equals its string in options files and traces."""
from enum import StrEnum


class CacheMode(StrEnum):
    FULL = "full"                # keep the text before the first change, recompute the rest
    PIE = "pie"                  # keep every unchanged run, re-rotate shifted tokens
    NAIVE = "naive"              # pie without the re-rotation (a baseline)


MODES = tuple(m.value for m in CacheMode)
