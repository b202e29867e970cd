"""The packages' layer order, read from the source (every import, function-local ones
too): lsp -> completion -> models -> {analysis, cache}; a package imports only packages
below it, so there is no import cycle between packages."""
from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RANK = {"lsp": 3, "completion": 2, "models": 1, "analysis": 0, "cache": 0}


def _imported_packages(path: Path, package: str) -> set[tuple[str, int]]:
    """(package, line) of every inkling package ``path`` imports."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:                       # relative: within the package, or above it
                names = [f"inkling.{package}"] if node.level == 1 else \
                    [f"inkling.{node.module or ''}"]
            elif node.module:
                names = [node.module]
        for name in names:
            parts = name.split(".")
            if parts[0] == "inkling" and len(parts) > 1 and parts[1] in RANK:
                found.add((parts[1], node.lineno))
    return found


def _edges() -> list[tuple[str, str, str]]:
    edges = []
    for package in RANK:
        for path in sorted((REPO / package).rglob("*.py")):
            for target, line in _imported_packages(path, package):
                if target != package:
                    edges.append((package, target, f"{path.relative_to(REPO)}:{line}"))
    return edges


def test_every_package_imports_only_layers_below_it():
    upward = [f"{where}: {src} imports {dst}" for src, dst, where in _edges()
              if RANK[dst] >= RANK[src]]
    assert not upward, "imports against the layer order:\n" + "\n".join(upward)


def test_the_reader_sees_relative_and_function_local_imports(tmp_path: Path):
    sample = tmp_path / "m.py"
    sample.write_text("from . import x\nfrom ..cache import y\n"
                      "def f():\n    from inkling.lsp import z\n    import inkling.models.w\n")
    assert _imported_packages(sample, "completion") == {
        ("completion", 1), ("cache", 2), ("lsp", 4), ("models", 5)}
