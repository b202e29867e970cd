"""Syntax guard and stop rules over text, with tree-sitter:

* ``longest_valid_prefix``: the longest prefix of a draft that adds no ERROR or MISSING
  node to its statement (a draft cut off mid-statement is cut back to it);
* ``statement_end``: where a line completion's statement is complete;
* ``block_end``: where a block completion ends (the first line that dedents).

The module functions are pure over (text, offset, draft); ``SyntaxGuard`` holds what they
share for one cursor (the parsed document, the scan state at the cursor), so a caller that
asks many times per completion parses the document once.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from .brace_scanner import BraceScanState
from .grammars import Grammars
from .python_scanner import ScanState
from .statement_start import scan_start, statement_start
from .syntax_errors import InsertionChecker
from .vocabulary import is_ident_char

BLOCK_OPENERS = (":", "{", "(", "[")
MAX_CHECKS = 32


@dataclass
class SyntaxGuard:
    """Guard and stop rules for drafts inserted at ``offset`` of ``text``."""
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

    @cached_property
    def _root(self):
        if self.checker is not None:
            return self.checker._tree.root_node
        return self.tree.root_node if self.tree is not None else None

    @cached_property
    def _line_prefix(self) -> str:
        return self.text[self.text.rfind("\n", 0, self.offset) + 1:self.offset]

    @cached_property
    def _scan(self):
        """The lexical state at the cursor (scanned from its statement's start)."""
        start = scan_start(self._root, self.text, self.offset) \
            if self.language == "python" else statement_start(self._root, self.text, self.offset)
        chunk = self.text[start:self.offset]
        if self.language == "python":
            return ScanState().advance(chunk)
        return BraceScanState().advance(self.text[self.text.rfind("\n", 0, self.offset) + 1:
                                                  self.offset])

    # ------------------------------------------------------------------ guard
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

    # ------------------------------------------------------------- stop rules
    def statement_end(self, draft: str) -> int | None:
        """Where the statement the cursor is in is complete: the index of the first line
        break that ends it (the draft is cut there), or None when it has not ended."""
        if self.language == "python":
            return _python_statement_end(self._scan, draft)
        state = self._scan
        for i, ch in enumerate(draft):
            if ch == "\n" and state.in_code and state.depth <= 0 and \
                    (self.checker is None or self.valid(draft[:i])):
                return i
            state = state.advance(ch)
        return None

    def block_end(self, draft: str, indent: int | None = None, final: bool = False
                  ) -> int | None:
        """Where a block completion ends: before the first line (after the first) that
        indents less than the block body (``indent``: the body's minimum indentation;
        by default one more than the block header's), trailing blank lines dropped.
        None while the block may go on; with ``final`` the draft's end is an end."""
        body = indent if indent is not None else self.header_indent() + 1
        state = self._scan
        offset = 0
        lines = draft.split("\n")
        for i, line in enumerate(lines):
            if i > 0 and line.strip() and state.in_code and _indent(line) < body:
                return _rstrip_blank(draft, offset)
            if i < len(lines) - 1:
                state = state.advance(line + "\n")
            offset += len(line) + 1
        return _rstrip_blank(draft, len(draft)) if final else None

    def header_indent(self) -> int:
        """Indentation of the block header: the cursor line if it opens a block, else the
        nearest non-blank line above."""
        prefix = self._line_prefix
        if prefix.strip() and prefix.rstrip().endswith(BLOCK_OPENERS):
            return _indent(prefix)
        end = self.text.rfind("\n", 0, self.offset)
        while end > 0:
            start = self.text.rfind("\n", 0, end) + 1
            line = self.text[start:end]
            if line.strip():
                return _indent(line)
            end = start - 1
        return 0


def longest_valid_prefix(text: str, offset: int, draft: str, language: str = "python",
                         grammars: Grammars | None = None) -> int:
    """The longest prefix of ``draft`` inserted at ``offset`` that adds no error node."""
    return SyntaxGuard(text, offset, language, grammars or Grammars()).longest_valid_prefix(draft)


def statement_end(text: str, offset: int, draft: str, language: str = "python",
                  grammars: Grammars | None = None) -> int | None:
    """Where a line completion's statement is complete (an index into ``draft``) or None."""
    return SyntaxGuard(text, offset, language, grammars or Grammars()).statement_end(draft)


def block_end(text: str, offset: int, draft: str, language: str = "python",
              indent: int | None = None, final: bool = False,
              grammars: Grammars | None = None) -> int | None:
    """Where a block completion ends (an index into ``draft``) or None."""
    return SyntaxGuard(text, offset, language, grammars or Grammars()).block_end(
        draft, indent, final)


def _python_statement_end(state: ScanState, draft: str) -> int | None:
    for i, ch in enumerate(draft):
        continued = state.mode == "code" and state.line.endswith("\\")
        if ch == "\n" and state.mode != "string" and not state.frames and not continued:
            return i
        state = state.advance(ch)
    return None


def _boundaries(draft: str, lo: int, hi: int) -> list[int]:
    """Cut points in ``draft[lo:hi]`` between tokens (not inside a word), longest first."""
    out = []
    for i in range(hi - 1, lo, -1):
        a, b = draft[i - 1], draft[i]
        if not (is_ident_char(a) and is_ident_char(b)) and not a.isspace():
            out.append(i)
    return out


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def _rstrip_blank(text: str, end: int) -> int:
    return len(text[:end].rstrip(" \t\n"))
