"""Completion metrics of the replay (definitions in docs/evaluation.md), as pure functions."""
from __future__ import annotations

import re

from inkling.analysis.text_edit import common_prefix_length
from inkling.lsp.server_stats import percentile  # the server's latency figures use the same

_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def first_line(text: str) -> str:
    """The text up to its first line break (LSP line breaks: \\n, \\r\\n, \\r)."""
    return _LINE_BREAK.split(text, 1)[0]


def exact_line(draft: str, expected: str) -> bool:
    """The draft's first line equals the expected one, trailing whitespace ignored."""
    return first_line(draft).rstrip() == first_line(expected).rstrip()


def exact_line_any(drafts: list[str], expected: str) -> bool:
    return any(exact_line(d, expected) for d in drafts)


def levenshtein(a: str, b: str) -> int:
    """Edit distance (insertions, deletions, substitutions of one character each)."""
    if len(a) < len(b):
        a, b = b, a
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, start=1):
        current = [i]
        for j, cb in enumerate(b, start=1):
            current.append(min(previous[j] + 1, current[j - 1] + 1,
                               previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def edit_similarity(draft: str, expected: str) -> float:
    """1 - Levenshtein(first lines) / max(their lengths, 1), trailing whitespace ignored."""
    a, b = first_line(draft).rstrip(), first_line(expected).rstrip()
    return 1.0 - levenshtein(a, b) / max(len(a), len(b), 1)


def accepted_chars(draft: str, expected: str) -> int:
    """Length of the common prefix of the draft and the expected text."""
    return common_prefix_length(draft, expected)


def distribution(values: list[float]) -> dict | None:
    """The median, 95th percentile and mean of ``values`` (three places), or None for none."""
    if not values:
        return None
    return {"p50": round(percentile(values, 50), 3), "p95": round(percentile(values, 95), 3),
            "mean": round(sum(values) / len(values), 3)}


def mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def fraction(flags: list[bool | None]) -> float | None:
    """Share of True among the measured (non-None) flags; None when nothing was measured."""
    measured = [f for f in flags if f is not None]
    return sum(measured) / len(measured) if measured else None


def measured(flags: list[bool | None]) -> int:
    """How many of the flags were measured (not None): the denominator of ``fraction``."""
    return sum(f is not None for f in flags)


def ratio(part: float, whole: float) -> float | None:
    """``part`` / ``whole``, None where ``whole`` is not positive (nothing to divide by)."""
    return part / whole if whole > 0 else None


def shown(draft: str) -> bool:
    """Whether a draft shows anything in the editor: a character that is not whitespace."""
    return bool(draft.strip())
