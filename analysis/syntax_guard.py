"""Syntax guard with tree-sitter: ``longest_valid_prefix`` of a draft adds no ERROR or MISSING
node to its statement, nor a Python argument list the compiler rejects (compile_rules.py). The
draft is judged with its open strings and brackets closed after it (``unfinished.closers``).
``SyntaxGuard`` parses one cursor's window once and reparses only the window per check
(docs/decisions/syntax-guard.md); where a draft ends is the stop rules' business.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from inkling.analysis.grammars import Grammars
from inkling.analysis.parse_window import Window, statement_window
from inkling.analysis.syntax_errors import InsertionChecker
from inkling.analysis.python_scanner import ScanState
from inkling.analysis.text_edit import byte_offset
from inkling.analysis.unfinished import closers
from inkling.analysis.vocabulary import is_ident_char

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
    open_string: str = ""               # the plain string open at ``offset``, "" in code
    scan: ScanState | None = None       # the scanner's state at ``offset`` (Python) or None

    @cached_property
    def parser(self):
        return self.grammars.parser(self.language)

    @cached_property
    def document_checker(self) -> InsertionChecker | None:
        """The checks over the whole document, which the window's must agree with."""
        if not self.parser:
            return None
        return InsertionChecker(self.parser, self.text, self.offset,
                                self.tree.copy() if self.tree is not None else None,
                                self.open_string, compile_rules=self.language == "python")

    @cached_property
    def checker(self) -> InsertionChecker | None:
        """The checks over the cursor's statement window, else over the whole document."""
        window = self.window
        if window is None or not self.parser:
            return self.document_checker
        return InsertionChecker(self.parser, window.text, window.offset, None,
                                self.open_string, compile_rules=True)

    @cached_property
    def window(self) -> Window | None:
        """The part of a Python document the checks parse (None: all of it)."""
        if self.language != "python" or self.tree is None:
            return None
        data = self.text.encode("utf-8", "surrogatepass")
        return statement_window(self.tree.root_node, data, byte_offset(self.text, self.offset))

    def prepare(self) -> None:
        """Parse now what every check reads, during the editor's debounce after an edit."""
        checker = self.checker
        if checker is not None and checker.compile_rules:
            checker.old_breaks()

    def valid(self, draft: str) -> bool | None:
        """No new ERROR/MISSING node in the statement; None without a grammar. Checked in the
        window where the draft stays in it, else in the whole document."""
        window = self.window
        checker = self.checker if window is None or window.keeps(draft) else \
            self.document_checker
        if checker is None:
            return None
        ending = closers(self.scan, draft) if self.scan is not None and draft else ""
        return not checker.introduces_error(draft + ending)

    def longest_valid_prefix(self, draft: str) -> int:
        """Length of the longest valid prefix of ``draft``: the whole draft, then line ends, then
        token boundaries of the first failing line, longest first, in ``max_checks`` parses."""
        if self.checker is None or self.inert(draft) or self.valid(draft):
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

    def inert(self, draft: str) -> bool:
        """Whether ``draft`` provably adds no error without a reparse: plain text inside a whole
        string literal or a line comment, which the lexer reads as the same token, longer."""
        if self.tree is None or any(ch in draft for ch in "\r\x0c\v"):
            return False
        b = byte_offset(self.text, self.offset)
        root = self.tree.root_node
        node = _literal_at(root, b) or (_literal_at(root, b - 1) if b else None)
        if node is None or node.has_error:
            return False
        if node.type == "comment":
            line_comment = (node.text or b"").startswith((b"#", b"//"))
            return line_comment and node.start_byte < b <= node.end_byte and "\n" not in draft
        kids = node.children
        if len(kids) < 2 or kids[0].type != "string_start" or kids[-1].type != "string_end" \
                or kids[-1].is_missing or not kids[0].end_byte <= b <= kids[-1].start_byte:
            return False
        opener = kids[0].text or b""
        if "\n" in draft and opener[-3:] not in (b'"""', b"'''"):
            return False
        return not any(ch in draft for ch in "\"'\\{}")


def _literal_at(root, b: int):
    """The string or comment node holding byte ``b``; None inside an ERROR node (a longer token
    could change its recovery) or an f-string's replacement field (code)."""
    node = root.descendant_for_byte_range(b, b)
    while node is not None and node.type not in ("string", "comment"):
        if node.is_error or node.type == "interpolation" or \
                node.type.endswith(("statement", "definition", "block", "module")):
            return None
        node = node.parent
    up = node
    while up is not None:
        if up.is_error:
            return None
        up = up.parent
    return node


def longest_valid_prefix(text: str, offset: int, draft: str, language: str = "python",
                         grammars: Grammars | None = None) -> int:
    """The longest prefix of ``draft`` inserted at ``offset`` that adds no error node."""
    return SyntaxGuard(text, offset, language, grammars or Grammars()).longest_valid_prefix(draft)


def _boundaries(draft: str, lo: int, hi: int) -> list[int]:
    """Cut points in ``draft[lo:hi]`` between tokens, longest first; never inside a run of one
    quote, where a docstring's three quotes cut to two would read as an empty string."""
    out = []
    for i in range(hi - 1, lo, -1):
        a, b = draft[i - 1], draft[i]
        if not (is_ident_char(a) and is_ident_char(b)) and not a.isspace() \
                and not (a == b and a in "\"'"):
            out.append(i)
    return out
