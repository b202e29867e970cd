"""Does inserting text add a tree-sitter ERROR or MISSING node to its statement (or, in Python,
a compile-rule break: compile_rules.py)? Errors are compared by kind and start, mapped back to
the old document, so errors already there do not count. Text that stays inside an open string
(``stays_in_string``) is decided without the trees: an unclosed string's recovery moves with
every byte, so comparing error nodes there would measure the insertion's length.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from inkling.analysis.compile_rules import rule_breaks
from inkling.analysis.text_edit import TextEdit, byte_offset

_STATEMENT_SUFFIXES = ("_statement", "_definition", "_declaration", "_item")
_ROOTS = ("module", "program", "source_file", "translation_unit")


@dataclass(frozen=True)
class Insertion:
    start: int    # byte offset of the insertion in the old document
    size: int     # bytes inserted

    def back(self, byte: int) -> int | None:
        """A byte offset of the new document in the old one (None: inside the insertion)."""
        if byte <= self.start:
            return byte
        if byte >= self.start + self.size:
            return byte - self.size
        return None


def error_nodes(node, lo: int, hi: int):
    """ERROR and MISSING nodes under ``node`` that overlap bytes [lo, hi] (iterative)."""
    stack = [node]
    while stack:
        n = stack.pop()
        if n.end_byte < lo or n.start_byte > hi:
            continue
        if n.is_error or n.is_missing:
            yield n
            if n.is_missing:
                continue
        if n.has_error:
            stack.extend(reversed(n.children))


def _key(node, start) -> tuple:
    return ("MISSING " + node.type if node.is_missing else "ERROR"), start


def is_statement(node) -> bool:
    return node.type.endswith(_STATEMENT_SUFFIXES) or node.type in _ROOTS


def enclosing_statement(root, lo: int, hi: int):
    node = root.descendant_for_byte_range(lo, hi) or root
    while node.parent is not None and not is_statement(node):
        node = node.parent
    return node


def stays_in_string(quote: str, insertion: str) -> bool:
    """Whether ``insertion``, typed inside an open non-f-string delimited by ``quote``, leaves the
    lexer in that string: no delimiter character, backslash, odd line break, or line end
    unless triple-quoted."""
    if not quote or any(ch in insertion for ch in quote[0] + "\\\r\x0c\v"):
        return False
    return "\n" not in insertion or len(quote) == 3


@dataclass
class InsertionChecker:
    """Checks insertions into one text at one offset; the old tree is parsed once (or given)."""
    parser: object
    text: str
    offset: int
    tree: object = None          # ``text``'s tree when the caller has one (not parsed again)
    open_string: str = ""        # the open plain string's delimiter at ``offset``, else ""
    compile_rules: bool = False  # Python's: compile_rules.py's breaks count as errors too
    _before: bytes = b""
    _tree: object = None
    _start: int = 0
    _breaks: list | None = None

    def __post_init__(self):
        self._before = self.text.encode("utf-8", "surrogatepass")
        self._tree = self.tree if self.tree is not None else self.parser.parse(self._before)
        self._start = byte_offset(self.text, self.offset)

    def introduces_error(self, insertion: str) -> bool:
        if not insertion or stays_in_string(self.open_string, insertion):
            return False
        data = insertion.encode("utf-8", "surrogatepass")
        ins = Insertion(self._start, len(data))
        after = self._before[:ins.start] + data + self._before[ins.start:]
        new_root = self._reparse(insertion, after).root_node
        stmt = enclosing_statement(new_root, ins.start, ins.start + ins.size)
        lo, hi = stmt.start_byte, stmt.end_byte
        # a statement bound inside the insertion maps to the insertion point
        old_lo, old_hi = (ins.start if b is None else b for b in (ins.back(lo), ins.back(hi)))
        old = Counter(_key(n, n.start_byte) for n in error_nodes(self._tree.root_node,
                                                                  old_lo, old_hi))
        new = Counter(_key(n, ins.back(n.start_byte)) for n in error_nodes(new_root, lo, hi))
        if self.compile_rules:             # what the parser accepts but Python rejects
            old.update(self.old_breaks())
            new.update((what, ins.start if ins.back(at) is None else ins.back(at))
                       for what, at in rule_breaks(new_root, ins.start, ins.start + ins.size))
        return bool(new - old)

    def old_breaks(self) -> list[tuple[str, int]]:
        """The compile rules the old text breaks at the insertion point, kept."""
        if self._breaks is None:
            self._breaks = rule_breaks(self._tree.root_node, self._start, self._start)
        return self._breaks

    def _reparse(self, insertion: str, after: bytes):
        tree = self._tree.copy()
        new_text_end = self.offset + len(insertion)
        edit = TextEdit(self.offset, self.offset, new_text_end)
        new_text = self.text[:self.offset] + insertion + self.text[self.offset:]
        tree.edit(**edit.tree_sitter_args(self.text, new_text))
        return self.parser.parse(after, tree)
