"""syntax_valid: does inserting a suggestion add a tree-sitter ERROR or MISSING node
to the statement that encloses it? The check itself is the analysis layer's
(`inkling.analysis.syntax_errors.InsertionChecker`); this keeps one parser per language
for the replay.
"""
from __future__ import annotations

from tree_sitter import Parser

from inkling.analysis.grammars import Grammars
from inkling.analysis.open_string import open_string_at
from inkling.analysis.syntax_errors import InsertionChecker


class SyntaxChecker:
    """One parser per language, reused for every check."""

    def __init__(self):
        self._parsers: dict[str, object] = {}

    def _parser(self, language: str):
        if language not in self._parsers:
            lang = Grammars().language(language)
            if lang is None:
                self._parsers[language] = None
            else:
                self._parsers[language] = Parser(lang)
        return self._parsers[language]

    def introduces_error(self, language: str, text: str, offset: int, insertion: str
                         ) -> bool | None:
        """True when ``insertion`` at character ``offset`` of ``text`` adds an ERROR or
        MISSING node to its enclosing statement; None when ``language`` has no grammar.
        Text that stays inside the string the lexer is in adds none (the rule the syntax
        guard uses: ``inkling.analysis.syntax_errors.stays_in_string``)."""
        parser = self._parser(language)
        if parser is None:
            return None
        tree = parser.parse(text.encode("utf-8", "surrogatepass"))
        quote = open_string_at(tree.root_node, text, offset, language)
        return InsertionChecker(parser, text, offset, tree, quote).introduces_error(insertion)

    def valid(self, language: str, text: str, offset: int, insertion: str) -> bool | None:
        bad = self.introduces_error(language, text, offset, insertion)
        return None if bad is None else not bad
