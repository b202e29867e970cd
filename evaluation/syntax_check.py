"""syntax_valid: does a shown suggestion, inserted at its position, add a syntax error
anywhere in the document?

The document is parsed whole twice, without the suggestion and with it (fresh parses, no
incremental reuse), and every tree-sitter ERROR and MISSING node of the two is compared
by kind and by where it starts, mapped back to the document without the suggestion (an
old error that merely grows over the inserted text is the same error); in Python the
compiler's rules that the grammar does not enforce (`analysis/compile_rules.py`) count
too, over the whole document. A node the document did not have makes the suggestion
invalid; old errors do not count against it (the document may be broken while someone
types).

This is not the syntax guard's decision. The guard (`analysis/syntax_errors.py`
`InsertionChecker`) looks only at the statement around the insertion, reparses
incrementally, and cuts a draft to its longest prefix that passes; this check reads the
whole file, so a kept draft that breaks code after its statement still fails. One rule is
shared, because it is the lexer's and not a heuristic: text that stays inside the string
literal the cursor is in adds no error (`stays_in_string`; tree-sitter's recovery of an
unterminated string moves with every byte inserted, and would report the insertion's
length, not its syntax).
"""
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
        """True when ``insertion`` at character ``offset`` of ``text`` adds an ERROR or
        MISSING node (or, in Python, a compile-rule break) anywhere in the document; None
        when ``language`` has no grammar."""
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
    """(kind, start byte in the document without the insertion) of every error under
    ``root``; ``back`` maps a byte of this tree's document to that one."""
    found = Counter((("MISSING " + n.type) if n.is_missing else "ERROR", back(n.start_byte))
                    for n in error_nodes(root, 0, root.end_byte))
    if language == "python":            # what the grammar accepts but Python rejects
        found.update((what, back(at)) for what, at in rule_breaks(root, 0, root.end_byte))
    return found
