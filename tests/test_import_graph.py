"""The import graph, read from the source (every import, function-local ones too).

The packages' layers, top to bottom:

    cli  ->  training  ->  evaluation  ->  lsp  ->  completion  ->  {analysis, cache}  ->  {runtime, models}

A package imports only packages in a layer below its own; two packages of one layer never
import each other. So the language server (lsp) never imports the evaluation tools, nothing
the server runs imports the training recipe, the model runtime knows nothing of the
edit-consistent cache above it, and no package imports the command line.

So there is no import cycle between packages; a second test checks that directly, from
the graph alone. Inside each package, the modules' imports (function-local ones too) have
no cycle either.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
LAYER = {"cli": 6, "training": 5, "evaluation": 4, "lsp": 3, "completion": 2,
         "analysis": 1, "cache": 1, "runtime": 0, "models": 0}


def _module_name(path: Path) -> str:
    """``completion/decoding/greedy.py`` -> ``inkling.completion.decoding.greedy``."""
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(["inkling", *parts])


def _is_package(path: Path) -> bool:
    return path.name == "__init__.py"


def _imports(path: Path) -> list[tuple[str, int, bool]]:
    """(absolute name, line, module level) of every import in ``path``: relative imports
    resolved; ``from P import x`` gives ``P.x`` (which may name a module or an attribute
    of P). Module level: run when the module is imported (not inside a function, not
    under ``if TYPE_CHECKING:``)."""
    module = _module_name(path)
    package = module if _is_package(path) else module.rpartition(".")[0]
    found: list[tuple[str, int, bool]] = []

    def visit(node: ast.AST, module_level: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                visit(child, False)
            elif isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                visit(child, False)
            elif isinstance(child, ast.Import):
                found.extend((a.name, child.lineno, module_level) for a in child.names)
            elif isinstance(child, ast.ImportFrom):
                if child.level:
                    base = package.split(".")
                    base = base[:len(base) - (child.level - 1)]
                    source = ".".join(base + ([child.module] if child.module else []))
                else:
                    source = child.module or ""
                found.extend((f"{source}.{a.name}", child.lineno, module_level)
                             for a in child.names)
            else:
                visit(child, module_level)
    visit(ast.parse(path.read_text(encoding="utf-8"), str(path)), True)
    return found


def _package_of(name: str) -> str | None:
    parts = name.split(".")
    return parts[1] if parts[0] == "inkling" and len(parts) > 1 and parts[1] in LAYER else None


def _package_edges() -> list[tuple[str, str, str]]:
    """(importer, imported, file:line) of every import from one package into another."""
    edges = []
    for package in LAYER:
        for path in sorted((REPO / package).rglob("*.py")):
            for name, line, _ in _imports(path):
                target = _package_of(name)
                if target is not None and target != package:
                    edges.append((package, target, f"{path.relative_to(REPO)}:{line}"))
    return edges


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` (its nodes in order, the first repeated last), or None."""
    state: dict[str, int] = {}                      # 1: on the current path, 2: done
    path: list[str] = []

    def walk(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (found := walk(nxt)):
                return found
        path.pop()
        state[node] = 2
        return None
    for node in sorted(graph):
        if node not in state and (found := walk(node)):
            return found
    return None


def test_every_package_imports_only_the_layers_below_it():
    wrong = [f"{where}: {src} imports {dst}" for src, dst, where in _package_edges()
             if LAYER[dst] >= LAYER[src]]
    assert not wrong, "imports against the layer order:\n" + "\n".join(wrong)


def test_no_import_cycle_between_packages():
    graph: dict[str, set[str]] = {}
    for src, dst, _ in _package_edges():
        graph.setdefault(src, set()).add(dst)
    assert _cycle(graph) is None, f"package import cycle: {' -> '.join(_cycle(graph))}"


def _module_graph(package: str) -> dict[str, set[str]]:
    """Module -> the modules of the same package it imports (function-local imports too;
    ``from .x import y`` counts as an import of module x; a subpackage's __init__ is a
    module of its own)."""
    paths = {_module_name(p): p for p in (REPO / package).rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for module, path in paths.items():
        for name, _, _ in _imports(path):
            while name and name not in paths:       # ``from .x import y``: module x
                name = name.rpartition(".")[0]
            if name and name != module and name != f"inkling.{package}":
                graph.setdefault(module, set()).add(name)
    return graph


@pytest.mark.parametrize("package", sorted(LAYER))
def test_no_import_cycle_between_the_modules_of_a_package(package):
    cycle = _cycle(_module_graph(package))
    assert cycle is None, f"{package} module import cycle: {' -> '.join(cycle or [])}"


def test_every_top_level_package_has_a_layer():
    tops = {p.parent.name for p in REPO.glob("*/__init__.py")}
    assert tops == set(LAYER), f"packages without a layer: {tops - set(LAYER)}"


def test_the_reader_sees_relative_and_function_local_imports(monkeypatch):
    sample = REPO / "completion" / "decoding" / "sample.py"       # never written: parsed only
    text = ("from . import greedy\nfrom ..drafting.suffix_index import SuffixIndex\n"
            "from ...cache import fim\nimport inkling.models.corpus\n"
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from inkling.lsp import x\n"
            "def f():\n    from inkling.analysis.grammars import Grammars\n")
    monkeypatch.setattr(Path, "read_text", lambda self, encoding=None: text)
    assert _imports(sample) == [
        ("inkling.completion.decoding.greedy", 1, True),
        ("inkling.completion.drafting.suffix_index.SuffixIndex", 2, True),
        ("inkling.cache.fim", 3, True),
        ("inkling.models.corpus", 4, True),
        ("typing.TYPE_CHECKING", 5, True),
        ("inkling.lsp.x", 7, False),
        ("inkling.analysis.grammars.Grammars", 9, False)]


def test_the_cycle_finder_finds_a_cycle():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b", "c"}, "b": {"c"}}) is None


def test_one_import_style_absolute_everywhere():
    """Every package imports its siblings by their full ``inkling.`` name: one style to
    read and to grep, whatever folder a module sits in."""
    relative = [f"{path.relative_to(REPO)}:{node.lineno}"
                for package in LAYER for path in sorted((REPO / package).rglob("*.py"))
                for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                if isinstance(node, ast.ImportFrom) and node.level]
    assert not relative, "relative imports (use inkling.<package>...):\n" + "\n".join(relative)
