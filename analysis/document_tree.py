"""A tree-sitter tree for one open document, kept up to date incrementally."""
from __future__ import annotations

from dataclasses import dataclass, field

from inkling.analysis.text_edit import TextEdit


@dataclass
class DocumentTree:
    """The text and its syntax tree. ``edit`` applies one change with ``Tree.edit`` and an
    incremental reparse; ``version`` counts changes (symbol extraction keys on it)."""
    language: str
    text: str
    parser: object
    tree: object = None
    version: int = 0
    source: bytes = field(default=b"", repr=False)

    def __post_init__(self):
        self.source = self.text.encode("utf-8", "surrogatepass")
        self.tree = self.parser.parse(self.source)

    @property
    def root(self):
        return self.tree.root_node

    def edit(self, new_text: str, change: TextEdit | None = None) -> None:
        """Make ``new_text`` the document's text; ``change`` says what changed (computed from
        the two texts when omitted)."""
        old = self.text
        if new_text == old:
            return
        change = change if change is not None else TextEdit.between(old, new_text)
        if not _consistent(old, new_text, change):
            change = TextEdit.between(old, new_text)
        self.tree.edit(**change.tree_sitter_args(old, new_text))
        self.text = new_text
        self.source = new_text.encode("utf-8", "surrogatepass")
        self.tree = self.parser.parse(self.source, self.tree)
        self.version += 1

    def apply(self, start: int, old_end: int, new_fragment: str) -> None:
        """Replace characters ``start:old_end`` with ``new_fragment``."""
        new_text = self.text[:start] + new_fragment + self.text[old_end:]
        self.edit(new_text, TextEdit(start, old_end, start + len(new_fragment)))


def _consistent(old: str, new: str, c: TextEdit) -> bool:
    """The edit leaves head and tail as they were (a caller's wrong edit is recomputed)."""
    if not (0 <= c.start <= c.old_end <= len(old) and c.start <= c.new_end <= len(new)):
        return False
    if len(old) - c.old_end != len(new) - c.new_end:
        return False
    return old[:c.start] == new[:c.start] and old[c.old_end:] == new[c.new_end:]
