"""The shape of the code, read from the source (scripts/code_shape.py prints the figures):
no function below the adapters takes more than seven parameters (a request object instead
of positional bundles); the Engine is a few named steps (at most 200 lines); no class has
more than 20 methods; no package function is longer than 60 lines but the few named below
with their reason; and a function-local import says why it is not at the top (a
``# lazy:`` comment with what importing it there saves, measured)."""
from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))
from code_shape import (MAX_FUNCTION_LINES, MAX_METHODS, functions, lines,  # noqa: E402
                        local_imports, methods, packages)

MAX_PARAMETERS = 7
MAX_ENGINE_LINES = 200
# functions allowed past MAX_FUNCTION_LINES, and why
LONG_FUNCTIONS: dict[str, str] = {}
PACKAGES = packages(REPO)


def _sources(package: str):
    for path in sorted((REPO / package).rglob("*.py")):
        yield path.relative_to(REPO).as_posix(), path.read_text(encoding="utf-8")


def parameters(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Parameters a caller may pass: self / cls not counted, *args and **kwargs one each."""
    a = node.args
    names = [p.arg for p in a.posonlyargs + a.args + a.kwonlyargs]
    if names and names[0] in ("self", "cls"):
        names = names[1:]
    return len(names) + (a.vararg is not None) + (a.kwarg is not None)


def test_no_function_below_the_adapters_takes_more_than_seven_parameters():
    long = []
    for package in ("completion", "cache", "analysis"):
        for path in sorted((REPO / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                        parameters(node) > MAX_PARAMETERS:
                    long.append(f"{path.relative_to(REPO)}:{node.lineno} {node.name} "
                                f"({parameters(node)})")
    assert not long, "functions with more than 7 parameters:\n" + "\n".join(long)


def test_the_counter_sees_every_kind_of_parameter():
    tree = ast.parse("class A:\n    def f(self, a, /, b, *c, d, **e): pass\n"
                     "def g(a, b=1, *, c): pass\n")
    counts = {n.name: parameters(n) for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
    assert counts == {"f": 5, "g": 3}


@pytest.mark.parametrize("package", PACKAGES)
def test_no_class_has_more_than_20_methods(package):
    big = [f"{rel}:{n.lineno} {n.name} ({methods(n)})" for rel, text in _sources(package)
           for n in ast.walk(ast.parse(text)) if isinstance(n, ast.ClassDef)
           and methods(n) > MAX_METHODS]
    assert not big, f"classes over {MAX_METHODS} methods:\n" + "\n".join(big)


@pytest.mark.parametrize("package", PACKAGES)
def test_no_function_is_longer_than_60_lines(package):
    long = [f"{rel}:{n.lineno} {name} ({lines(n)})" for rel, text in _sources(package)
            for name, n in functions(ast.parse(text))
            if lines(n) > MAX_FUNCTION_LINES and f"{rel} {name}" not in LONG_FUNCTIONS]
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines:\n" + "\n".join(long)


@pytest.mark.parametrize("package", PACKAGES)
def test_a_function_local_import_says_why(package):
    silent = []
    for rel, text in _sources(package):
        source = text.splitlines()
        for node in local_imports(ast.parse(text)):
            said = source[node.lineno - 1] + source[node.lineno - 2]
            if "# lazy:" not in said:
                silent.append(f"{rel}:{node.lineno} {source[node.lineno - 1].strip()}")
    assert not silent, ("function-local imports without a '# lazy:' reason on their line or "
                        "the line above:\n" + "\n".join(silent))


def test_the_long_functions_named_exist():
    found = {f"{rel} {name}" for package in PACKAGES for rel, text in _sources(package)
             for name, _ in functions(ast.parse(text))}
    assert set(LONG_FUNCTIONS) <= found, set(LONG_FUNCTIONS) - found


def test_the_engine_is_a_facade():
    lines = (REPO / "completion" / "engine.py").read_text(encoding="utf-8").count("\n")
    assert lines <= MAX_ENGINE_LINES, f"completion/engine.py has {lines} lines"
