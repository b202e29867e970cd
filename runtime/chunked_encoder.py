"""Tokenizing text line by line with the same ids as tokenizing it whole.
BPE never merges across a pre-token boundary, so text cut where the pre-tokenizer always puts
one (``split_rule``) tokenizes piece by piece as it does whole, and the pieces are memoized.
Which cut each known pattern allows, and the proofs, are in docs/decisions/line-cuts.md."""
from __future__ import annotations

import json
import re
from enum import Enum, StrEnum
from typing import Callable, NamedTuple

CONTRACTIONS = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)"
_CONTRACTIONS_SPELLED = r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])"
LLAMA3_PATTERN = (CONTRACTIONS + r"|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
                  r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_PATTERN = (CONTRACTIONS + r"|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
                 r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
GPT2_PATTERN = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
GPT2_LLAMACPP_PATTERN = GPT2_PATTERN.removesuffix(r"|\s+")  # llama.cpp's; the rest are gaps
NEWLINE_PATTERNS = (r"[\r\n]", "[\r\n]")
DIGIT_PATTERN = r"\p{N}"

MEMO_CHARS = 4_000_000      # text remembered with its ids; cleared when full
SAFE_NORMALIZERS = {None, "NFC"}     # NFC never composes across a line break


class Rule(StrEnum):
    """Where text is cut; every cut has a line break on one side."""
    NEWLINE = "newline"         # after every line break
    LINE_START = "line-start"   # after a line break, where the next line is [ \t]*[!-~]
    NON_SPACE = "non-space"     # before a line break that follows a non-space character
    WHOLE = "whole"             # nowhere


CUTS = {Rule.NEWLINE: re.compile(r"(?<=\n)(?!\Z)"),
        Rule.LINE_START: re.compile(r"(?<=\n)(?=[ \t]*[!-~])"),   # ASCII: no Unicode tables
        Rule.NON_SPACE: re.compile(r"(?<=\S)(?=\n)")}   # Python's \s holds all of Oniguruma's


class Effect(Enum):
    """What one pre-tokenizer step does at a cut."""
    SEPARATES = "separates"    # its pieces are those of the two sides: the cut is safe
    PASSES = "passes"          # it separates there or leaves one piece for the next step


_ALL_PASS = dict.fromkeys(CUTS, Effect.PASSES)
_GPT2 = {Rule.NON_SPACE: Effect.SEPARATES}
_LLAMA3 = {Rule.LINE_START: Effect.SEPARATES}
# Each known Split pattern (Isolated, not inverted): its name and what it does at each cut.
SPLITS: dict[str, tuple[str, dict[Rule, Effect]]] = {
    QWEN2_PATTERN: ("Qwen2's pattern", _LLAMA3),
    LLAMA3_PATTERN: ("Llama 3's pattern", _LLAMA3),
    GPT2_PATTERN: ("GPT-2's pattern", _GPT2),
    GPT2_LLAMACPP_PATTERN: ("GPT-2's pattern, llama.cpp's", _GPT2),
    DIGIT_PATTERN: ("digits", _ALL_PASS),                  # a line break is never a digit
    **{p: ("line breaks", dict.fromkeys(CUTS, Effect.SEPARATES)) for p in NEWLINE_PATTERNS},
}


class SplitRule(NamedTuple):
    rule: Rule
    reason: str     # why this rule: the step that separates, or what stops every cut


def _step_effects(step: dict) -> tuple[dict[Rule, Effect], str]:
    """A step's effect at each cut it allows, and its name for messages."""
    kind = step.get("type")
    if kind == "Split":
        regex = (step.get("pattern", {}).get("Regex") or "").replace(_CONTRACTIONS_SPELLED,
                                                                       CONTRACTIONS)
        name, effects = SPLITS.get(regex, (f"an unknown pattern {regex[:40]!r}", {}))
        if step.get("behavior") != "Isolated" or step.get("invert"):
            return {}, f"Split on {name}, {step.get('behavior')}, invert {step.get('invert')}"
        return effects, f"Split on {name}"
    if kind == "Digits":
        return _ALL_PASS, "Digits"
    if kind == "ByteLevel":
        if step.get("add_prefix_space"):
            return {}, "ByteLevel with add_prefix_space"
        return (_GPT2, "ByteLevel (GPT-2's pattern)") if step.get("use_regex", True) else (
            _ALL_PASS, "ByteLevel")
    return {}, str(kind)


def _normalizer_problem(normalizer: dict | None) -> str:
    steps = (normalizer["normalizers"] if (normalizer or {}).get("type") == "Sequence"
             else [normalizer])
    bad = [s["type"] for s in steps if (s or {}).get("type") not in SAFE_NORMALIZERS]
    return f"normalizer {bad[0]} may change text across a line break" if bad else ""


def _added_problem(added: list[dict]) -> str:
    for token in added:
        if "\n" in token["content"] or "\r" in token["content"]:
            return f"added token {token['content']!r} holds a line break"
        if token.get("lstrip") or token.get("rstrip"):
            return f"added token {token['content']!r} strips the whitespace beside it"
    return ""


def split_rule(pre_tokenizer: dict | None, normalizer: dict | None,
               added: list[dict] = ()) -> SplitRule:
    """The widest safe cut for a tokenizer with these parts (their JSON states), and why."""
    problem = (_normalizer_problem(normalizer) or _added_problem(list(added))
               or ("" if pre_tokenizer else "no pre-tokenizer: the text is one word"))
    if problem:
        return SplitRule(Rule.WHOLE, problem)
    steps = (pre_tokenizer["pretokenizers"] if pre_tokenizer.get("type") == "Sequence"
             else [pre_tokenizer])
    stops = []
    for rule in CUTS:
        for i, step in enumerate(steps, 1):
            effects, name = _step_effects(step)
            effect = effects.get(rule)
            if effect is Effect.SEPARATES:
                return SplitRule(rule, f"pre-tokenizer step {i}, {name}, separates there")
            if effect is None:
                stops.append((i, f"pre-tokenizer step {i}, {name}, may join text across "
                                 f"a line cut"))
                break
        else:
            stops.append((len(steps) + 1, "no pre-tokenizer step separates text at a line cut"))
    return SplitRule(Rule.WHOLE, max(stops)[1])


def _state(component) -> dict | None:
    return None if component is None else json.loads(component.__getstate__())


def tokenizer_rule(tokenizer) -> SplitRule:
    """``split_rule`` for a ``tokenizers.Tokenizer``."""
    if tokenizer.truncation or tokenizer.padding:
        return SplitRule(Rule.WHOLE, "the tokenizer truncates or pads what it encodes")
    added = [{"content": t.content, "lstrip": t.lstrip, "rstrip": t.rstrip}
             for t in tokenizer.get_added_tokens_decoder().values()]
    return split_rule(_state(tokenizer.pre_tokenizer), _state(tokenizer.normalizer), added)


class ChunkedEncoder:
    """``encode(text)``: the tokenizer's ids, pieces memoized (dict operations: thread-safe)."""

    def __init__(self, encode_one: Callable[[str], list[int]], rule: str, reason: str = ""):
        if rule not in [r.value for r in Rule]:
            raise ValueError(f"unknown split rule {rule!r}")
        self._encode_one = encode_one
        self.rule = Rule(rule)
        self.reason = reason
        self._cut = CUTS.get(self.rule)
        self._memo: dict[str, tuple[int, ...]] = {}
        self._memo_chars = 0

    @classmethod
    def for_tokenizer(cls, tokenizer) -> "ChunkedEncoder":
        """For a ``tokenizers.Tokenizer`` (special tokens are not added)."""
        rule, reason = tokenizer_rule(tokenizer)
        return cls(lambda text: tokenizer.encode(text, add_special_tokens=False).ids, rule,
                   reason)

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
