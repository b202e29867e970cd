"""syntax_valid: does a shown suggestion, inserted at its position, add a syntax error anywhere?

The whole document is parsed without and with it, and error nodes (plus Python's compile rules)
are compared by kind and start mapped back to the old text, so old errors do not count. Unlike
the syntax guard this reads the whole file; text staying inside the cursor's string literal adds
no error, since tree-sitter's recovery of an open string moves with every byte inserted."""
from __future__ import annotations

from collections import Counter

from inkling.analysis.compile_rules import rule_breaks
from inkling.analysis.grammars import Grammars
from inkling.analysis.open_string import open_string_at
from inkling.analysis.syntax_errors import Insertion, error_nodes, stays_in_string
from inkling.analysis.text_edit import byte_offset


class SyntaxChecker:
    """One parser per language, reused for every check."""

    def __init__(self):
        self._grammars = Grammars()
        self._parsers: dict[str, object] = {}

    def _parser(self, language: str):
        if language not in self._parsers:
            self._parsers[language] = self._grammars.parser(language)
        return self._parsers[language]

    def introduces_error(self, language: str, text: str, offset: int, insertion: str
                         ) -> bool | None:
        """True when ``insertion`` at character ``offset`` adds an error node or compile-rule
        break anywhere; None when ``language`` has no grammar."""
        parser = self._parser(language)
        if parser is None:
            return None
        before = text.encode("utf-8", "surrogatepass")
        old_root = parser.parse(before).root_node
        if stays_in_string(open_string_at(old_root, text, offset, language), insertion):
            return False
        data = insertion.encode("utf-8", "surrogatepass")
        ins = Insertion(byte_offset(text, offset), len(data))
        new_root = parser.parse(before[:ins.start] + data + before[ins.start:]).root_node
        old = _errors(old_root, language, lambda at: at)
        new = _errors(new_root, language, lambda at: ins.start if ins.back(at) is None
                      else ins.back(at))
        return bool(new - old)

    def valid(self, language: str, text: str, offset: int, insertion: str) -> bool | None:
        bad = self.introduces_error(language, text, offset, insertion)
        return None if bad is None else not bad


def _errors(root, language: str, back) -> Counter:
    """(kind, start byte mapped by ``back`` to the old document) of every error under ``root``."""
    found = Counter((("MISSING " + n.type) if n.is_missing else "ERROR", back(n.start_byte))
                    for n in error_nodes(root, 0, root.end_byte))
    if language == "python":            # what the grammar accepts but Python rejects
        found.update((what, back(at)) for what, at in rule_breaks(root, 0, root.end_byte))
    return found
