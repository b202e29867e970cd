"""The names of decoding's modes, as StrEnums equal to their option strings.
A stdlib-only leaf, so the options tree and the decoders share them without importing each other."""
from __future__ import annotations

from enum import StrEnum


class Decoder(StrEnum):
    GREEDY = "greedy"
    BRANCHES = "branches"
    SUPERPOSED = "superposed"
    SEQUENTIAL = "sequential"
    BEAM = "beam"


class Trigger(StrEnum):
    AUTOMATIC = "automatic"      # as the user types
    INVOKED = "invoked"          # asked for


class DraftMode(StrEnum):
    AUTO = "auto"                # suffix where drafting pays (draft_mode.py), else none
    NONE = "none"
    PROMPT_LOOKUP = "prompt-lookup"
    SUFFIX = "suffix"
