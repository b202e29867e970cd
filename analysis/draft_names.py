"""Names a draft uses that cannot be right: a free read bound nowhere the document, workspace or
builtins know, or an attribute a resolved receiver lacks. The document is analysed with the
draft inserted, so names the draft binds count as defined.
"""
from __future__ import annotations

import builtins
import functools
import keyword
import re
from dataclasses import dataclass

from tree_sitter import QueryCursor

from inkling.analysis.cursor_scope import cursor_scope
from inkling.analysis.python_scanner import ScanState
from inkling.analysis.statement_start import scan_start
from inkling.analysis.python_symbols import dotted, node_text
from inkling.analysis.resolver import MODULE_DUNDERS, Resolver
from inkling.analysis.symbol_index import SymbolIndex
from inkling.analysis.text_edit import byte_offset

_BUILTINS = frozenset(dir(builtins)) | MODULE_DUNDERS
_WORDS = frozenset(keyword.kwlist) | frozenset(keyword.softkwlist)
_SOFT_KEYWORDS = frozenset({"match", "case", "type", "_", "print", "exec"})
_USED_AFTER = re.compile(r"\s*[(.\[]")
_BINDS_NEXT = re.compile(rb"(?:\b(?:def|class|as|for|global|nonlocal|import|lambda)|\*\*?)\s*$")
_IMPORTS = ("import_statement", "import_from_statement", "future_import_statement")


@dataclass
class DraftNames:
    """Checks drafts against one index (parsers per instance; not thread-shared)."""
    index: SymbolIndex

    def undefined(self, text: str, offset: int, draft: str, path: str = "") -> list[str]:
        """The names ``draft`` (inserted at ``offset``) uses that cannot be right."""
        new_text = text[:offset] + draft + text[offset:]
        parser = self.index.grammars.parser("python")
        extractor = self.index.parsers.extractor()
        source = new_text.encode("utf-8", "surrogatepass")
        root = parser.parse(source).root_node
        names = self.index.module_names_for(path) if path else []
        symbols = extractor.extract(root, names[0] if names else "", path,
                                    path.endswith("__init__.py"))
        lo = byte_offset(new_text, offset)
        hi = lo + len(draft.encode("utf-8", "surrogatepass"))
        cursor = QueryCursor(extractor.identifier_query)
        cursor.set_byte_range(lo, hi)
        idents = [n for n in cursor.captures(root).get("id", [])
                  if n.start_byte >= lo and n.end_byte <= hi]
        if not idents:
            return []
        binding = QueryCursor(extractor.binding_query)
        binding.set_byte_range(lo, hi)
        bound_here = {(n.start_byte, n.end_byte) for ns in binding.captures(root).values()
                      for n in ns}
        resolver = Resolver(self.index)
        known = self._known(symbols, extractor.bound_names(root), resolver)
        scope = cursor_scope(symbols, new_text, offset, root, extractor)
        open_at, code = _draft_lexicon(root, new_text, offset, draft)
        open_from = lo + len(draft[:open_at].encode("utf-8", "surrogatepass"))
        ascii_draft = draft.isascii()
        out = []
        for n in idents:
            name = node_text(n)
            at = n.start_byte - lo if ascii_draft else \
                len(source[lo:n.start_byte].decode("utf-8", "ignore"))
            if at < len(code) and not code[at]:
                continue                                 # in a string or a comment
            if _is_attribute_name(n):
                bad = self._attribute_missing(n, name, scope, resolver)
            else:         # inside brackets the draft leaves open, a later ``for`` may bind it
                bad = n.start_byte < open_from and \
                    self._free_undefined(n, name, bound_here, known, source)
            if bad and name not in out:
                out.append(name)
        return out

    def _known(self, symbols, bound: set[str], resolver: Resolver) -> frozenset[str] | None:
        parts = readable_parts(symbols, bound, self.index, resolver, words=False)
        return None if parts is None else parts[0] | parts[1]

    def _attribute_missing(self, node, name: str, scope, resolver: Resolver) -> bool:
        chain = dotted(node.parent.child_by_field_name("object"))
        if not chain:
            return False
        members = resolver.members(scope.resolve_chain(resolver, chain))
        return members is not None and name not in members

    def _free_undefined(self, node, name, bound_here, known, source: bytes) -> bool:
        if known is None or name in known or name in _SOFT_KEYWORDS:
            return False
        if (node.start_byte, node.end_byte) in bound_here:
            return False
        parent = node.parent
        if parent is not None and parent.type == "keyword_argument" and \
                parent.child_by_field_name("name") == node:
            return False
        in_error = False
        p = parent
        while p is not None:
            if p.type in _IMPORTS:
                return False
            in_error = in_error or p.type == "ERROR"
            p = p.parent
        if in_error:        # a broken draft: only clear uses (called, dotted, indexed)
            head = source[max(0, node.start_byte - 16):node.start_byte]
            tail = source[node.end_byte:node.end_byte + 16].decode("utf-8", "ignore")
            return bool(_USED_AFTER.match(tail)) and not _BINDS_NEXT.search(head)
        return True


def readable_parts(symbols, bound, index: SymbolIndex, resolver: Resolver, words: bool = True
                   ) -> tuple[frozenset[str], frozenset[str]] | None:
    """Names a free read may name, as (the workspace's, builtins and star imports', stable across
    keystrokes; the document's own); None when a star import allows any name."""
    stars = resolver.star_exports(symbols)
    if stars is None:
        return None
    shared = _shared_names(index.workspace_names(), frozenset(stars), words)
    return shared, frozenset(set(bound) | set(symbols.names)) - shared


@functools.lru_cache(maxsize=8)
def _shared_names(workspace: frozenset, stars: frozenset, words: bool) -> frozenset:
    """The workspace's part of ``readable_parts``, cached so a keystroke does not copy it again."""
    return frozenset(_BUILTINS | workspace | stars | (_WORDS if words else frozenset()))


def _draft_lexicon(root, text: str, offset: int, draft: str) -> tuple[int, list[bool]]:
    """(the index of the draft's outermost bracket left open, ``len(draft)`` if none; per
    character whether it is code), scanned from the lexical state at the cursor."""
    start = scan_start(root, text, offset)
    state = ScanState().advance(text[start:offset])
    inside = bool(state.frames)
    opened: list[int] = []
    code = []
    for i, ch in enumerate(draft):
        code.append(state.mode == "code" and not state.pending)
        before = len(state.frames)
        state = state.advance(ch)
        if len(state.frames) > before:
            opened.append(i)
        elif len(state.frames) < before and opened:
            opened.pop()
    return (0 if inside else opened[0] if opened else len(draft)), code


def _is_attribute_name(node) -> bool:
    parent = node.parent
    return parent is not None and parent.type == "attribute" and \
        parent.child_by_field_name("attribute") == node
