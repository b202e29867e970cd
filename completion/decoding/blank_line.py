"""A suggestion at a blank line begins with text (docs/decisions/blank-lines.md).
``BlankLine`` masks line ends, end of text and at an indented line whitespace-only tokens until
text comes, then hands over to the monitor state it wraps (None without one)."""
from __future__ import annotations

from dataclasses import dataclass

import torch

from inkling.completion.decoding.seams import Monitor


class LineEnds:
    """bool [vocab] masks of the tokens a blank suggestion may not start with (once per model)."""

    def __init__(self, texts: list[str], vocab_size: int, stop_ids):
        ends = torch.zeros(max(vocab_size, len(texts)), dtype=torch.bool)
        ends[len(texts):] = True
        for i, text in enumerate(texts):
            if not text or text.lstrip(" \t").startswith(("\n", "\r")):
                ends[i] = True
        for i in stop_ids:
            if 0 <= i < len(ends):
                ends[i] = True
        self.allowed = ~ends                  # bool [vocab]
        spaces = torch.tensor([bool(t) and not t.strip() for t in texts] +
                              [False] * (len(ends) - len(texts)))
        self.allowed_indented = self.allowed & ~spaces     # and no whitespace-only token
        self._on: dict = {}

    def on(self, device, indented: bool = False) -> torch.Tensor:
        mask = self.allowed_indented if indented else self.allowed
        if device is None:
            return mask
        found = self._on.get((device, indented))
        if found is None:
            found = self._on[(device, indented)] = mask.to(device)
        return found


def line_ends(runtime, texts: list[str]) -> LineEnds:
    """The runtime's LineEnds, made once per model."""
    found = runtime.attached.get("line_ends")
    if found is None:
        found = runtime.attached["line_ends"] = LineEnds(texts, runtime.vocab_size,
                                                         runtime.stop_ids)
    return found


@dataclass(frozen=True)
class BlankLine:
    ends: LineEnds
    texts: list[str]              # each token id's text
    inner: Monitor | None = None  # the analysis monitor's state, which sees every token
    indented: bool = False        # the line holds indentation: no more whitespace first

    def mask(self, device=None):
        """bool [vocab]: what may come while the suggestion is blank (and the monitor allows)."""
        own = self.ends.on(device, self.indented)
        inner = None if self.inner is None else self.inner.mask(device)
        if inner is None:
            return own
        n = min(len(own), len(inner))          # ids past either: not allowed (as masked())
        return own[:n] & inner[:n]

    def forced_text(self) -> str:
        return "" if self.inner is None else self.inner.forced_text()

    @property
    def refusal(self) -> tuple:
        """What ``refuses`` depends on (its answers are kept by it)."""
        return ("blank-line", self.indented)

    def refuses(self, text: str) -> bool:
        """Whether the rule refuses ``text``, the part of a token past healed text."""
        return text.lstrip(" \t").startswith(("\n", "\r")) or \
            (self.indented and bool(text) and not text.strip())

    def advance_token(self, token_id: int):
        inner = None if self.inner is None else self.inner.advance_token(token_id)
        text = self.texts[token_id] if 0 <= token_id < len(self.texts) else ""
        return self._after(text, inner)

    def advance(self, text: str):
        return self._after(text, None if self.inner is None else self.inner.advance(text))

    def _after(self, text: str, inner):
        """The state after ``text``: the monitor's once it holds something, else blank still."""
        return inner if text.strip() else BlankLine(self.ends, self.texts, inner, self.indented)
