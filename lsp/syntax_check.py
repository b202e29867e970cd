"""syntax_valid: does inserting a suggestion add a tree-sitter ERROR or MISSING node
to the statement that encloses it?

Error nodes of the document before and after the insertion are compared by kind and
by where they start, mapped back to the document before the insertion (an old error
that merely grows over the inserted text is the same error); an error node the old
document did not have, inside the enclosing statement, makes the suggestion invalid.
The document may already be broken (someone is typing): old errors do not count
against the suggestion.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

_STATEMENT_SUFFIXES = ("_statement", "_definition", "_declaration", "_item")
_ROOTS = ("module", "program", "source_file", "translation_unit")


def _language(name: str):
    """The tree-sitter Language for ``name``, or None when no grammar is installed
    (Python, JavaScript, TypeScript, Go, Rust and Java come with inkling)."""
    from inkling.analysis.grammars import Grammars
    return Grammars().language(name)


def _is_statement(node) -> bool:
    return node.type.endswith(_STATEMENT_SUFFIXES) or node.type in _ROOTS


@dataclass(frozen=True)
class _Insertion:
    start: int    # byte offset of the insertion in the old document
    size: int     # bytes inserted

    def back(self, byte: int) -> int | None:
        """A byte offset of the new document in the old one (None: inside the insertion)."""
        if byte <= self.start:
            return byte
        if byte >= self.start + self.size:
            return byte - self.size
        return None


def _error_nodes(node, lo: int, hi: int):
    """ERROR and MISSING nodes under ``node`` that overlap bytes [lo, hi]."""
    if node.end_byte < lo or node.start_byte > hi:
        return
    if node.is_error or node.is_missing:
        yield node
        if node.is_missing:
            return
    if node.has_error:
        for child in node.children:
            yield from _error_nodes(child, lo, hi)


def _key(node, start: int | None) -> tuple:
    kind = "MISSING " + node.type if node.is_missing else "ERROR"
    return kind, start


def _enclosing_statement(root, lo: int, hi: int):
    node = root.descendant_for_byte_range(lo, hi) or root
    while node.parent is not None and not _is_statement(node):
        node = node.parent
    return node


class SyntaxChecker:
    """One parser per language, reused for every check."""

    def __init__(self):
        self._parsers: dict[str, object] = {}

    def supports(self, language: str) -> bool:
        return self._parser(language) is not None

    def _parser(self, language: str):
        if language not in self._parsers:
            lang = _language(language)
            if lang is None:
                self._parsers[language] = None
            else:
                from tree_sitter import Parser
                self._parsers[language] = Parser(lang)
        return self._parsers[language]

    def introduces_error(self, language: str, text: str, offset: int, insertion: str
                         ) -> bool | None:
        """True when ``insertion`` at character ``offset`` of ``text`` adds an ERROR or
        MISSING node to its enclosing statement; None when ``language`` has no grammar."""
        parser = self._parser(language)
        if parser is None:
            return None
        if not insertion:
            return False
        before = text.encode("utf-8")
        ins = _Insertion(len(text[:offset].encode("utf-8")), len(insertion.encode("utf-8")))
        after = before[:ins.start] + insertion.encode("utf-8") + before[ins.start:]
        new_root = parser.parse(after).root_node
        stmt = _enclosing_statement(new_root, ins.start, ins.start + ins.size)
        lo, hi = stmt.start_byte, stmt.end_byte
        old_lo, old_hi = ins.back(lo), ins.back(hi)
        old_root = parser.parse(before).root_node
        old = Counter(_key(n, n.start_byte) for n in _error_nodes(old_root, old_lo, old_hi))
        new = Counter(_key(n, ins.back(n.start_byte)) for n in _error_nodes(new_root, lo, hi))
        return bool(new - old)

    def valid(self, language: str, text: str, offset: int, insertion: str) -> bool | None:
        bad = self.introduces_error(language, text, offset, insertion)
        return None if bad is None else not bad
