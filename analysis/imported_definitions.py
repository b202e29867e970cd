"""The workspace definitions a file imports, as their declarations read (a signature, a class
outline, a constant's line), re-exports followed; each with its distance from the cursor to the
nearest use, so a caller short of room keeps the nearest. Other modules give nothing.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from inkling.analysis.module_paths import resolve_relative
from inkling.analysis.symbol_index import SymbolIndex
from inkling.analysis.symbols import FileSymbols, ImportBinding
from inkling.analysis.workspace_files import read_text

UNUSED = 1 << 30                 # the distance of an imported name the file never uses
MAX_FOLLOW = 4                   # re-exports followed at most this deep
MAX_CLASS_LINES = 24             # a class's outline is cut here
_CHAIN = re.compile(r"(?<![\w.])[A-Za-z_][\w.]*")
_HEADER = re.compile(r"^(\s*)(?:async\s+def|def|class)\s+\w")
_IMPORT_LINE = re.compile(r"^\s*(?:from\s+\S+\s+import\b|import\s)")


@dataclass(frozen=True)
class Definition:
    path: Path                   # the workspace file that defines it
    name: str                    # the name the cursor's file uses
    line: int                    # its declaration's first line in ``path`` (0-based)
    text: str                    # the declaration's lines as written, each ending in \n
    order: int                   # the importing statement's rank in the cursor's file
    distance: int = UNUSED       # lines from the cursor's line to the nearest use


class ImportedDefinitions:
    """Finds the workspace definitions a file imports; ``open_text(path)``: an open document's
    text (it wins over the disk), or None."""

    def __init__(self, index: SymbolIndex, open_text: Callable[[Path], str | None]):
        self.index = index
        self.open_text = open_text
        self._resolved: dict[tuple, list[Definition]] = {}      # bindings -> definitions
        self._lines: dict[Path, tuple[object, list[str]]] = {}  # path -> (version, lines)
        self._line_names: dict[str, tuple[str, ...]] = {}       # line text -> names it uses

    def find(self, symbols: FileSymbols, text: str, line: int) -> list[Definition]:
        """The definitions ``symbols`` imports, in import order, with distances from ``line``."""
        uses = self._uses(text)
        out = []
        for d in self._definitions(symbols, uses):
            near = _nearest(uses.get(d.name, ()), line)
            out.append(Definition(d.path, d.name, d.line, d.text, d.order, near))
        return out

    # --------------------------------------------------------------- resolving
    def _definitions(self, symbols: FileSymbols, uses: dict[str, list[int]]) -> list[Definition]:
        """Resolved once per set of imported names, which typing seldom changes."""
        bindings = list(symbols.imports.items()) + [("*", b) for b in symbols.star_imports]
        targets = tuple((module, name, used, order) for order, (local, b) in enumerate(bindings)
                        for (module, name), used in self._targets(symbols, local, b, uses))
        found = self._resolved.get(targets)
        if found is None:
            found = self._resolve_all(targets)
            self._resolved[targets] = found
            while len(self._resolved) > 32:
                self._resolved.pop(next(iter(self._resolved)))
        return found

    def _resolve_all(self, targets: tuple) -> list[Definition]:
        out: dict[tuple[Path, int], Definition] = {}
        for module, name, used, order in targets:
            d = self._define(module, name, used, order, 0)
            if d is not None and (d.path, d.line) not in out:
                out[(d.path, d.line)] = d
        return list(out.values())

    def _uses(self, text: str) -> dict[str, list[int]]:
        """Lines where each name or dotted prefix is used outside imports, kept per line text."""
        out: dict[str, list[int]] = {}
        if len(self._line_names) > 50_000:
            self._line_names.clear()
        for i, line in enumerate(text.split("\n")):
            names = self._line_names.get(line)
            if names is None:
                names = self._line_names[line] = _names(line)
            for name in names:
                out.setdefault(name, []).append(i)
        for i in _continued_imports(text):
            for name in self._line_names.get(text.split("\n")[i], ()):
                out[name].remove(i)
        return out

    def _targets(self, symbols: FileSymbols, local: str, b: ImportBinding, uses):
        """((module, name), the name the file uses) pairs an import binding stands for."""
        module = resolve_relative(symbols.module, symbols.is_package, b.module, b.level)
        if local == "*":
            target = self._workspace_module(module)
            names = [] if target is None else sorted(
                n for n in set(target.functions) | set(target.classes) if n in uses)
            return [((module, n), n) for n in names]
        if b.name and self._workspace_module(f"{module}.{b.name}") is None:
            return [((module, b.name), local)]
        module = f"{module}.{b.name}" if b.name else module
        prefix = f"{local}." if b.name or local != module.split(".")[0] else f"{module}."
        attrs = sorted({u[len(prefix):].split(".")[0] for u in uses if u.startswith(prefix)})
        return [((module, a), f"{prefix}{a}") for a in attrs]

    def _workspace_module(self, module: str) -> FileSymbols | None:
        sym = self.index.module(module) if module else None
        if sym is None or not sym.parsed or not sym.path:
            return None
        return sym if self.index.root_of(Path(sym.path).resolve()) is not None else None

    def _define(self, module: str, name: str, used: str, order: int, depth: int
                ) -> Definition | None:
        sym = self._workspace_module(module)
        if sym is None or depth > MAX_FOLLOW:
            return None
        lines = self._file_lines(Path(sym.path))
        if name in sym.functions:
            line = sym.functions[name].line
            return self._made(sym, used, line, _signature(lines, line), order)
        if name in sym.classes:
            c = sym.classes[name]
            return self._made(sym, used, c.line, _class_outline(lines, c.line, c.end_line), order)
        if name in sym.imports:
            b = sym.imports[name]
            origin = resolve_relative(sym.module, sym.is_package, b.module, b.level)
            return self._define(origin, b.name, used, order, depth + 1) if b.name else None
        if name in sym.names:
            at = _assignment(lines, name)
            return self._made(sym, used, at, lines[at] + "\n", order) if at is not None else None
        for star in sym.star_imports:
            origin = resolve_relative(sym.module, sym.is_package, star.module, star.level)
            d = self._define(origin, name, used, order, depth + 1)
            if d is not None:
                return d
        return None

    @staticmethod
    def _made(sym: FileSymbols, used: str, line: int, text: str, order: int
              ) -> Definition | None:
        return Definition(Path(sym.path).resolve(), used, line, text, order) if text else None

    def _file_lines(self, path: Path) -> list[str]:
        """The lines of ``path``: an open document's, else the disk's, kept by mtime."""
        text = self.open_text(path)
        if text is not None:
            return text.split("\n")
        try:
            version: object = path.stat().st_mtime_ns
        except OSError:
            return []
        cached = self._lines.get(path)
        if cached is None or cached[0] != version:
            text, _ = read_text(path, errors="replace")
            if text is None:
                return []
            lines = text.split("\n")
            cached = self._lines[path] = (version, lines)
        return cached[1]


# ------------------------------------------------------------------- the text
def _names(line: str) -> tuple[str, ...]:
    """The names a line uses (``a.b.c`` gives a, a.b and a.b.c); none on an import line."""
    if _IMPORT_LINE.match(line):
        return ()
    out = []
    for m in _CHAIN.finditer(line.split("#")[0]):
        parts = m.group().rstrip(".").split(".")
        out.extend(".".join(parts[:i]) for i in range(1, len(parts) + 1))
    return tuple(out)


def _continued_imports(text: str) -> list[int]:
    """Lines inside a parenthesised import statement after its first line."""
    if "import (" not in text:
        return []
    out, open_paren = [], False
    for i, line in enumerate(text.split("\n")):
        if open_paren:
            out.append(i)
            open_paren = ")" not in line
        elif _IMPORT_LINE.match(line):
            open_paren = "(" in line and ")" not in line
    return out


def _nearest(lines: list[int], line: int) -> int:
    return min((abs(u - line) for u in lines), default=UNUSED)


def _signature(lines: list[str], start: int) -> str:
    """The header lines from ``start`` to the one that ends with ``:`` (at most 8)."""
    out = []
    for line in lines[start:start + 8]:
        out.append(line)
        if line.split("#")[0].rstrip().endswith(":"):
            break
    return "\n".join(out) + "\n" if out else ""


def _class_outline(lines: list[str], start: int, end: int) -> str:
    """The class header, then its method headers and class-level assignments, as written."""
    head = _signature(lines, start)
    body = lines[start + head.count("\n"):end + 1]
    indent = next((len(b) - len(b.lstrip()) for b in body if b.strip()
                   and not b.lstrip().startswith("#")), None)
    out = []
    i = 0
    while indent is not None and i < len(body) and len(out) < MAX_CLASS_LINES:
        line = body[i]
        level = len(line) - len(line.lstrip())
        if line.strip() and level == indent:
            if _HEADER.match(line):
                sig = _signature(body, i)
                out.append(sig.rstrip("\n"))
                i += sig.count("\n")
                continue
            if re.match(r"\s*[A-Za-z_]\w*\s*(?::[^=]+)?=", line) and len(line) <= 120:
                out.append(line)
        i += 1
    return head + "".join(line + "\n" for line in out)


def _assignment(lines: list[str], name: str) -> int | None:
    """The first module-level line that assigns ``name``."""
    pattern = re.compile(rf"^{re.escape(name)}\s*(?::[^=]+)?=(?!=)")
    return next((i for i, line in enumerate(lines) if pattern.match(line)), None)
