"""The scope at a cursor: enclosing class and method, local names and imports. Enclosing
definitions are found by indentation, which works while the tree has not yet attached the
half-typed code to its function.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from inkling.analysis.entities import ClassRef, Entity, InstanceRef
from inkling.analysis.indentation import indent_width
from inkling.analysis.python_symbols import import_bindings, statements
from inkling.analysis.symbols import FileSymbols, ImportBinding

MAX_LINES_BACK = 20_000
MAX_BRACKET_LINES = 200           # lines a signature's brackets are followed back
_CLOSERS = ")]}"
_HEADER = re.compile(r"[ \t]*(?:async[ \t]+)?(def|class)[ \t]+([A-Za-z_]\w*)")
_PARAMS = re.compile(r"[ \t]*(?:async[ \t]+)?def[ \t]+\w+[ \t]*\(\s*\*{0,2}([A-Za-z_]\w*)")


@dataclass(frozen=True)
class Header:
    kind: str           # "def" | "class"
    name: str
    row: int
    indent: int
    first_param: str = ""
    start: int = 0      # character offset of the header line


@dataclass(frozen=True)
class CursorScope:
    symbols: FileSymbols
    headers: tuple[Header, ...] = ()            # outermost first
    class_ref: ClassRef | None = None           # the class whose method holds the cursor
    self_name: str = ""
    cls_name: str = ""
    locals: frozenset[str] = frozenset()
    local_imports: dict = field(default_factory=dict, compare=False)

    def resolve(self, resolver, name: str) -> Entity | None:
        """What a bare ``name`` stands for at the cursor."""
        if self.class_ref is not None and name and name == self.self_name:
            return InstanceRef(self.class_ref)
        if self.class_ref is not None and name and name == self.cls_name:
            return self.class_ref
        if name in self.local_imports:
            return resolver.binding(self.symbols, self.local_imports[name])
        if name in self.locals:
            return None
        return resolver.lookup(self.symbols, name)

    def resolve_chain(self, resolver, chain: str) -> Entity | None:
        parts = chain.split(".")
        entity = self.resolve(resolver, parts[0])
        for part in parts[1:]:
            entity = resolver.attribute(entity, part)
        return entity


@dataclass
class KeptHeaders:
    """One document's last ``enclosing_headers`` and what it read; owned by its document's
    thread."""
    text: str = ""
    line_start: int = -1
    level: int = -1
    headers: tuple[Header, ...] = ()


def enclosing_headers(text: str, offset: int, root=None, kept: KeptHeaders | None = None
                      ) -> tuple[Header, ...]:
    """``def``/``class`` lines enclosing ``offset`` by indentation, outermost first.

    They depend only on the text above the cursor's line and its level, so ``kept`` is reused
    while those stay (docs/decisions/keystroke-work.md); ``root`` tells lines inside strings."""
    line_start = text.rfind("\n", 0, offset) + 1
    prefix = text[line_start:offset]
    line_end = text.find("\n", offset)
    line = text[line_start:line_end if line_end >= 0 else len(text)]
    level = len(prefix) if not prefix.strip() else indent_width(line)
    if kept is not None and kept.line_start == line_start and kept.level == level and \
            (kept.text is text or text.startswith(kept.text[:line_start])):
        return kept.headers
    found = _headers_above(text, line_start, level, root)
    if kept is not None:
        kept.text, kept.line_start, kept.level, kept.headers = text, line_start, level, found
    return found


def _headers_above(text: str, line_start: int, level: int, root) -> tuple[Header, ...]:
    """The headers of the lines above ``line_start`` that indent less than ``level``."""
    row = text.count("\n", 0, line_start)
    found, end = [], line_start - 1
    for _ in range(MAX_LINES_BACK):
        if level == 0 or end < 0:
            break
        start = text.rfind("\n", 0, end) + 1
        row -= 1
        current = text[start:end]
        stripped = current.strip()
        if stripped and stripped[0] in _CLOSERS:   # ``) -> str:`` of ``def f(\n    a,\n) -> str:``
            start, row = _opening_line(text, start, row, current)
            current = text[start:text.find("\n", start)]
        end = start - 1
        if not stripped or stripped.startswith("#"):
            continue
        ind = indent_width(current)
        if ind >= level or _inside_string(root, row, ind):
            continue
        match = _HEADER.match(current)
        if match:
            params = _PARAMS.match(text, start, start + 400)   # ``self`` on the next line too
            found.append(Header(match.group(1), match.group(2), row, ind,
                                params.group(1) if params else "", start))
        level = ind
    return tuple(reversed(found))


def _opening_line(text: str, start: int, row: int, line: str) -> tuple[int, int]:
    """(offset, row) of the line opening the brackets ``line`` closes, else ``line``'s own."""
    depth, at, at_row = _net_closes(line), start, row
    for _ in range(MAX_BRACKET_LINES):
        if depth <= 0 or at == 0:
            break
        end = at - 1
        at = text.rfind("\n", 0, end) + 1
        at_row -= 1
        depth += _net_closes(text[at:end])
    return (at, at_row) if depth <= 0 else (start, row)


def _net_closes(line: str) -> int:
    """Brackets ``line`` closes, less those it opens."""
    return sum(line.count(c) for c in _CLOSERS) - sum(line.count(c) for c in "([{")


def cursor_scope(symbols: FileSymbols, text: str, offset: int, root=None,
                 extractor=None, kept: KeptHeaders | None = None) -> CursorScope:
    """The scope at ``offset``; ``root`` and ``extractor`` add local bindings."""
    headers = enclosing_headers(text, offset, root, kept)
    class_path, class_ref, self_name, cls_name = [], None, "", ""
    for i, h in enumerate(headers):
        if h.kind == "class" and all(x.kind == "class" for x in headers[:i]):
            class_path.append(h.name)
        elif h.kind == "def" and i > 0 and headers[i - 1].kind == "class" and \
                len(class_path) == i:
            class_ref = ClassRef(symbols.module, tuple(class_path), symbols)
            method = _method(symbols, class_path, h.name)
            decorators = method.decorators if method is not None else ()
            first = method.params[0] if method is not None and method.params else h.first_param
            if "staticmethod" not in decorators:
                self_name, cls_name = ("", first) if "classmethod" in decorators else (first, "")
    locals_, imports = _function_bindings(headers, root, extractor)
    locals_ -= {self_name, cls_name}
    return CursorScope(symbols, headers, class_ref, self_name, cls_name, frozenset(locals_),
                       imports)


def _method(symbols: FileSymbols, class_path: list[str], name: str):
    table, found = symbols.classes, None
    for part in class_path:
        found = table.get(part)
        if found is None:
            return None
        table = found.classes
    return found.methods.get(name) if found is not None else None


def _function_bindings(headers, root, extractor) -> tuple[set[str], dict]:
    """Names bound in the enclosing functions, and their import statements."""
    names: set[str] = set()
    imports: dict[str, ImportBinding] = {}
    if root is None or extractor is None:
        return names, imports
    for h in headers:
        if h.kind != "def":
            continue
        node = _definition_at(root, h)
        if node is None:
            continue
        names |= extractor.bound_names(node)
        for stmt, _ in statements(node.child_by_field_name("body")):
            for b in import_bindings(stmt):
                if b.local != "*":
                    imports[b.local] = b
    return names, imports


def _definition_at(root, h: Header):
    node = root.descendant_for_point_range((h.row, h.indent), (h.row, h.indent))
    for _ in range(8):
        if node is None:
            return None
        if node.type == "function_definition" and node.start_point[0] == h.row:
            return node
        node = node.parent
    return None


def _inside_string(root, row: int, column: int) -> bool:
    if root is None:
        return False
    node = root.descendant_for_point_range((row, column), (row, column))
    while node is not None and node.type not in ("module", "block"):
        if node.type in ("string", "string_content", "concatenated_string"):
            return True
        node = node.parent
    return False
