"""Fill-in-the-middle prompts within a token budget.

Only a window of text around the cursor is tokenized, so the cost does not grow with
the file. Windows start and end at line boundaries, so the same lines give the same
tokens from one keystroke to the next (the cache can reuse them). Text is normalised
to ``\\n`` line ends; the Engine converts suggestions back to the document's.
"""
from __future__ import annotations

from dataclasses import dataclass

from inkling.cache.runtime import ModelRuntime

CHARS_PER_TOKEN_WINDOW = 6   # generous: code averages about 3.2 characters per token here


@dataclass(frozen=True)
class Prompt:
    ids: list[int]
    prefix: str        # text of the window before the cursor (\n line ends)
    suffix: str        # text of the window after the cursor
    prefix_ids: list[int]
    suffix_ids: list[int]

    @property
    def line_prefix(self) -> str:
        return self.prefix[self.prefix.rfind("\n") + 1:]

    @property
    def line_suffix(self) -> str:
        end = self.suffix.find("\n")
        return self.suffix if end < 0 else self.suffix[:end]


def normalise_eol(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _head_cut(text: str, budget_chars: int) -> str:
    """The end of ``text``, at most ``budget_chars`` long, starting at a line start."""
    if len(text) <= budget_chars:
        return text
    if budget_chars <= 0:
        return ""
    start = len(text) - budget_chars
    nl = text.find("\n", start)
    return text[nl + 1:] if 0 <= nl < len(text) - 1 else text[start:]


def _tail_cut(text: str, budget_chars: int) -> str:
    """The start of ``text``, at most ``budget_chars`` long, ending at a line end."""
    if len(text) <= budget_chars:
        return text
    nl = text.rfind("\n", 0, budget_chars)
    return text[:nl + 1] if nl >= 0 else text[:budget_chars]


def _fit(runtime: ModelRuntime, text: str, budget: int, cut) -> tuple[str, list[int]]:
    """The longest line-aligned window ``cut(text, chars)`` whose tokens fit ``budget``."""
    chars = budget * CHARS_PER_TOKEN_WINDOW
    best: tuple[str, list[int]] | None = None
    for _ in range(8):
        window = cut(text, max(1, chars))
        ids = runtime.encode(window)
        if len(ids) <= budget:
            if best is None or len(ids) > len(best[1]):
                best = (window, ids)
            if len(ids) >= budget * 0.9 or len(window) >= len(text):
                return best
            chars = int(len(window) * budget / max(1, len(ids)) * 0.97) + 1
        else:
            chars = int(len(window) * budget / len(ids) * 0.95)
    return best or (cut(text, 0), [])


def fit_prefix(runtime: ModelRuntime, text: str, budget: int) -> tuple[str, list[int]]:
    """The longest line-aligned tail of ``text`` whose tokens fit ``budget``."""
    return _fit(runtime, text, budget, _head_cut)


def fit_suffix(runtime: ModelRuntime, text: str, budget: int) -> tuple[str, list[int]]:
    """The longest line-aligned head of ``text`` whose tokens fit ``budget``."""
    return _fit(runtime, text, budget, _tail_cut)


def budgets(runtime: ModelRuntime, prefix_tokens: int, suffix_tokens: int,
            max_new_tokens: int) -> tuple[int, int]:
    """Prompt budgets; zeros mean three quarters / one quarter of what the context leaves."""
    room = max(64, runtime.context_limit - max_new_tokens - 4)
    if not prefix_tokens and not suffix_tokens:
        return room * 3 // 4, room // 4
    prefix_tokens = prefix_tokens or max(16, room - suffix_tokens)
    suffix_tokens = suffix_tokens or max(0, room - prefix_tokens)
    return prefix_tokens, suffix_tokens


def build_prompt(runtime: ModelRuntime, before: str, after: str, prefix_budget: int,
                 suffix_budget: int, order: str) -> Prompt:
    """``before`` / ``after``: the document's text on each side of the cursor."""
    prefix, prefix_ids = fit_prefix(runtime, normalise_eol(before[-prefix_budget * 24:]),
                                    prefix_budget)
    if runtime.fim is None:
        return Prompt(prefix_ids, prefix, "", prefix_ids, [])
    suffix, suffix_ids = fit_suffix(runtime, normalise_eol(after[:suffix_budget * 24]),
                                    suffix_budget)
    ids = runtime.fim.build(order, prefix_ids, suffix_ids, _TokenIds(runtime))
    return Prompt(ids, prefix, suffix, prefix_ids, suffix_ids)


class _TokenIds(dict):
    def __init__(self, runtime: ModelRuntime):
        super().__init__()
        self._runtime = runtime

    def __missing__(self, token: str) -> int:
        return self._runtime.token_id(token)
