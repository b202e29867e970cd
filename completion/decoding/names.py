"""The names of decoding's modes: the decoder, the trigger and the draft mode. A leaf
(the standard library only): the options tree validates against these values and the
decoders dispatch on them, so neither imports the other. StrEnums, so each member equals
its string in options files, JSON, LSP settings and traces."""
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
