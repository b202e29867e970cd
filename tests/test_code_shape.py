"""The shape issue 22 asked of the code, read from the source: no function below the
adapters takes more than seven parameters (a request object instead of positional
bundles), and the Engine stays a façade."""
from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MAX_PARAMETERS = 7
MAX_ENGINE_LINES = 300


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


def test_the_engine_is_a_facade():
    lines = (REPO / "completion" / "engine.py").read_text(encoding="utf-8").count("\n")
    assert lines <= MAX_ENGINE_LINES, f"completion/engine.py has {lines} lines"
