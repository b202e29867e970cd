"""How a document's KV cache is reused across edits, by name: a StrEnum equal to its strings in
options and traces, torch-free so the options and command line import it cheaply."""
from enum import StrEnum


class CacheMode(StrEnum):
    FULL = "full"                # keep the text before the first change, recompute the rest
    PIE = "pie"                  # keep every unchanged run, re-rotate shifted tokens
    NAIVE = "naive"              # pie without the re-rotation (a baseline)


MODES = tuple(m.value for m in CacheMode)
