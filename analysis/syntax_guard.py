"""Syntax guard over text, with tree-sitter: ``longest_valid_prefix``, the longest prefix
of a draft that adds no ERROR or MISSING node to its statement (a draft cut off
mid-statement is cut back to it).

Where a draft ends is decided while decoding, by one stop-rule system
(``inkling.completion.decoding.stop_rules``); the guard only trims what was decoded.
``SyntaxGuard`` holds what one cursor's checks share (the parsed document), so a caller
that asks many times per completion parses the document once.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from .grammars import Grammars
from .syntax_errors import InsertionChecker
from .vocabulary import is_ident_char

MAX_CHECKS = 32


@dataclass
class SyntaxGuard:
    """The guard for drafts inserted at ``offset`` of ``text``."""
    text: str
    offset: int
    language: str = "python"
    grammars: Grammars = field(default_factory=Grammars)
    tree: object = None                 # a current tree of ``text`` (parsed when omitted)
    max_checks: int = MAX_CHECKS

    @cached_property
    def parser(self):
        return self.grammars.parser(self.language)

    @cached_property
    def checker(self) -> InsertionChecker | None:
        if not self.parser:
            return None
        return InsertionChecker(self.parser, self.text, self.offset,
                                self.tree.copy() if self.tree is not None else None)

    def valid(self, draft: str) -> bool | None:
        """No new ERROR/MISSING node in the statement; None without a grammar."""
        return None if self.checker is None else not self.checker.introduces_error(draft)

    def longest_valid_prefix(self, draft: str) -> int:
        """Length of the longest valid prefix of ``draft`` (the whole draft when there is
        no grammar). Tries the whole draft, then line ends, then token boundaries of the
        first line that fails, longest first, at most ``max_checks`` parses."""
        if self.checker is None or self.valid(draft):
            return len(draft)
        checks, best_line = 1, 0
        ends = [i for i, ch in enumerate(draft) if ch == "\n"]
        for end in reversed(ends):
            if checks >= self.max_checks:
                return best_line
            checks += 1
            if self.valid(draft[:end]):
                best_line = end
                break
        stop = next((e for e in ends if e > best_line), len(draft))
        for cut in _boundaries(draft, best_line, stop):
            if checks >= self.max_checks:
                break
            checks += 1
            if self.valid(draft[:cut]):
                return cut
        return best_line


def longest_valid_prefix(text: str, offset: int, draft: str, language: str = "python",
                         grammars: Grammars | None = None) -> int:
    """The longest prefix of ``draft`` inserted at ``offset`` that adds no error node."""
    return SyntaxGuard(text, offset, language, grammars or Grammars()).longest_valid_prefix(draft)


def _boundaries(draft: str, lo: int, hi: int) -> list[int]:
    """Cut points in ``draft[lo:hi]`` between tokens (not inside a word), longest first."""
    out = []
    for i in range(hi - 1, lo, -1):
        a, b = draft[i - 1], draft[i]
        if not (is_ident_char(a) and is_ident_char(b)) and not a.isspace():
            out.append(i)
    return out
