"""Tokenizing text line by line with the same ids as tokenizing it whole.
BPE never merges across a pre-token boundary, so pieces cut where the pattern forces one
(``split_rule``) tokenize alone as in the whole text, and are memoized."""
from __future__ import annotations

import json
import re
from typing import Callable

LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
                  r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
                 r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")

_AFTER_NON_SPACE = re.compile(r"(?<=\S)(?=\n)")        # zero-width cuts before a line break
_AFTER_ALNUM = re.compile(r"(?<=[A-Za-z0-9])(?=\n)")   # ASCII: Unicode tables may differ

MEMO_CHARS = 4_000_000      # text remembered with its ids; cleared when full
SAFE_NORMALIZERS = {None, "NFC"}     # NFC never composes across a line break


def split_rule(pre_tokenizer: dict | None, normalizer: dict | None) -> str:
    """``"non-space"``, ``"alnum"`` or ``"whole"``: where a tokenizer with these parts may cut."""
    if (normalizer or {}).get("type") not in SAFE_NORMALIZERS or not pre_tokenizer:
        return "whole"
    steps = (pre_tokenizer["pretokenizers"] if pre_tokenizer.get("type") == "Sequence"
             else [pre_tokenizer])
    byte_level = [s for s in steps if s.get("type") == "ByteLevel"]
    others = [s for s in steps if s.get("type") != "ByteLevel"]
    if len(byte_level) != 1 or byte_level[0].get("add_prefix_space"):
        return "whole"
    if byte_level[0].get("use_regex", True):          # GPT-2's pattern (Digits keeps its cuts)
        return "non-space" if all(s.get("type") == "Digits" for s in others) else "whole"
    if (len(others) == 1 and others[0].get("type") == "Split"
            and others[0].get("pattern", {}).get("Regex") in (LLAMA3_PATTERN, QWEN2_PATTERN)
            and others[0].get("behavior") == "Isolated" and not others[0].get("invert")):
        return "alnum"
    return "whole"


def _state(component) -> dict | None:
    return None if component is None else json.loads(component.__getstate__())


class ChunkedEncoder:
    """``encode(text)``: the tokenizer's ids, pieces memoized (dict operations: thread-safe)."""

    def __init__(self, encode_one: Callable[[str], list[int]], rule: str):
        if rule not in ("non-space", "alnum", "whole"):
            raise ValueError(f"unknown split rule {rule!r}")
        self._encode_one = encode_one
        self.rule = rule
        self._cut = {"non-space": _AFTER_NON_SPACE, "alnum": _AFTER_ALNUM}.get(rule)
        self._memo: dict[str, tuple[int, ...]] = {}
        self._memo_chars = 0

    @classmethod
    def for_tokenizer(cls, tokenizer) -> "ChunkedEncoder":
        """For a ``tokenizers.Tokenizer`` (special tokens are not added)."""
        rule = split_rule(_state(tokenizer.pre_tokenizer), _state(tokenizer.normalizer))
        return cls(lambda text: tokenizer.encode(text, add_special_tokens=False).ids, rule)

    def pieces(self, text: str) -> list[str]:
        return [text] if self._cut is None else self._cut.split(text)

    def encode(self, text: str) -> list[int]:
        if not text:
            return []
        out: list[int] = []
        memo = self._memo
        for piece in self.pieces(text):
            ids = memo.get(piece)
            if ids is None:
                ids = tuple(self._encode_one(piece))
                if self._memo_chars + len(piece) > MEMO_CHARS:
                    memo.clear()
                    self._memo_chars = 0
                memo[piece] = ids
                self._memo_chars += len(piece)
            out.extend(ids)
        return out
