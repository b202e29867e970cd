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
    start = len(text) - budget_chars
    nl = text.find("\n", start)
    return text[nl + 1:] if 0 <= nl < len(text) - 1 else text[start:]


def _tail_cut(text: str, budget_chars: int) -> str:
    """The start of ``text``, at most ``budget_chars`` long, ending at a line end."""
    if len(text) <= budget_chars:
        return text
    nl = text.rfind("\n", 0, budget_chars)
    return text[:nl + 1] if nl > 0 else text[:budget_chars]


def fit_prefix(runtime: ModelRuntime, text: str, budget: int) -> tuple[str, list[int]]:
    """The longest line-aligned tail of ``text`` whose tokens fit ``budget``."""
    window = _head_cut(text, budget * CHARS_PER_TOKEN_WINDOW)
    for _ in range(8):
        ids = runtime.encode(window)
        if len(ids) <= budget:
            return window, ids
        excess_chars = int((len(ids) - budget) * len(window) / len(ids) * 1.1) + 1
        window = _head_cut(window, len(window) - excess_chars)
    ids = runtime.encode(window)[-budget:]
    return runtime.decode(ids), ids


def fit_suffix(runtime: ModelRuntime, text: str, budget: int) -> tuple[str, list[int]]:
    """The longest line-aligned head of ``text`` whose tokens fit ``budget``."""
    window = _tail_cut(text, budget * CHARS_PER_TOKEN_WINDOW)
    for _ in range(8):
        ids = runtime.encode(window)
        if len(ids) <= budget:
            return window, ids
        excess_chars = int((len(ids) - budget) * len(window) / len(ids) * 1.1) + 1
        window = _tail_cut(window, len(window) - excess_chars)
    ids = runtime.encode(window)[:budget]
    return runtime.decode(ids), ids


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
    prefix, prefix_ids = fit_prefix(runtime, normalise_eol(before[-prefix_budget * 8:]),
                                    prefix_budget)
    if runtime.fim is None:
        return Prompt(prefix_ids, prefix, "", prefix_ids, [])
    suffix, suffix_ids = fit_suffix(runtime, normalise_eol(after[:suffix_budget * 8]),
                                    suffix_budget)
    ids = runtime.fim.build(order, prefix_ids, suffix_ids, _TokenIds(runtime))
    return Prompt(ids, prefix, suffix, prefix_ids, suffix_ids)


class _TokenIds(dict):
    def __init__(self, runtime: ModelRuntime):
        super().__init__()
        self._runtime = runtime

    def __missing__(self, token: str) -> int:
        return self._runtime.token_id(token)
