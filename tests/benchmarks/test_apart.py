"""The product's tests import no benchmark code: only tests/benchmarks/ puts benchmarks/ on
the import path or imports its modules (the benchmarks' trace files are data, and may be
read)."""
import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
BENCHMARKS = TESTS.parent / "benchmarks"


def _imports(tree: ast.AST) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.split(".")[0])
    return names


def test_no_product_test_imports_benchmark_code():
    modules = {p.stem for p in BENCHMARKS.glob("*.py")} | {"benchmarks"}
    found = []
    for path in sorted(TESTS.rglob("*.py")):
        if TESTS / "benchmarks" in path.parents:
            continue
        text = path.read_text(encoding="utf-8")
        tree = ast.parse(text)
        local = {p.stem for p in path.parent.glob("*.py")} | {"conftest"}
        for name in _imports(tree) & modules - local:
            found.append(f"{path.relative_to(TESTS)} imports {name}")
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and "insert" == getattr(node.func, "attr", "") \
                    and "benchmarks" in ast.unparse(node):
                found.append(f"{path.relative_to(TESTS)}:{node.lineno} puts benchmarks/ on "
                             "the import path")
    assert not found, found
