"""The shape of inkling's package code, read from the source: the Engine's size, the longest
functions, the classes with the most methods, function-local imports, modules per package and
import cycles inside a package (function-local imports included).

    python scripts/code_shape.py [REPO]        # REPO: a checkout (default: this one)

Used for the before/after figures of a restructuring; tests/test_code_shape.py holds the limits.
"""
from __future__ import annotations

import ast
import sys
from collections import Counter
from pathlib import Path

MAX_FUNCTION_LINES = 60
MAX_METHODS = 20


def packages(repo: Path) -> list[str]:
    """The top-level packages the wheel installs (setup.py's TOP, else every folder with an
    ``__init__.py`` but tests and benchmarks)."""
    setup = repo / "setup.py"
    if setup.is_file():
        for node in ast.parse(setup.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "TOP":
                return list(ast.literal_eval(node.value))
    return sorted(p.parent.name for p in repo.glob("*/__init__.py")
                  if p.parent.name not in ("tests", "benchmarks"))


def modules(repo: Path) -> dict[str, Path]:
    """``inkling.completion.engine`` -> its path, for every module of every package."""
    out = {}
    for top in packages(repo):
        for path in sorted((repo / top).rglob("*.py")):
            parts = list(path.relative_to(repo).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(["inkling", *parts])] = path
    return out


def functions(tree: ast.AST):
    """(qualified name, node) of every function, methods and nested functions included."""
    def walk(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield f"{prefix}{child.name}", child
                yield from walk(child, f"{prefix}{child.name}.")
            elif isinstance(child, ast.ClassDef):
                yield from walk(child, f"{prefix}{child.name}.")
            else:
                yield from walk(child, prefix)
    yield from walk(tree, "")


def lines(node: ast.AST) -> int:
    return node.end_lineno - node.lineno + 1


def methods(cls: ast.ClassDef) -> int:
    return sum(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) for n in cls.body)


def local_imports(tree: ast.AST) -> list[ast.stmt]:
    """Imports inside a function (not under ``if TYPE_CHECKING:``, which is module level)."""
    found = []
    for _, fn in functions(tree):
        for node in ast.walk(fn):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                found.append(node)
    return list({id(n): n for n in found}.values())


def imported_modules(tree: ast.AST, module: str, is_package: bool, known: set[str]) -> set[str]:
    """The modules of ``known`` that ``module`` imports (anywhere in it)."""
    package = module if is_package else module.rpartition(".")[0]
    out = set()
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            names = [f"{source}.{a.name}" for a in node.names]
        for name in names:
            while name and name not in known:
                name = name.rpartition(".")[0]
            if name and name != module:
                out.add(name)
    return out


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def shape(repo: Path) -> dict:
    mods = modules(repo)
    trees = {m: ast.parse(p.read_text(encoding="utf-8"), str(p)) for m, p in mods.items()}
    fns, classes, local = [], [], 0
    graphs: dict[str, dict[str, set[str]]] = {}
    for m, tree in trees.items():
        rel = mods[m].relative_to(repo).as_posix()
        fns += [(lines(n), f"{rel}:{n.lineno} {q}") for q, n in functions(tree)]
        classes += [(methods(n), f"{rel}:{n.lineno} {n.name}") for n in ast.walk(tree)
                    if isinstance(n, ast.ClassDef)]
        local += len(local_imports(tree))
        top = m.split(".")[1]
        pkg_mods = {k for k in mods if k.split(".")[1] == top}
        graphs.setdefault(top, {})[m] = imported_modules(
            tree, m, mods[m].name == "__init__.py", pkg_mods) - {f"inkling.{top}"}
    engine = repo / "completion" / "engine.py"
    etree = ast.parse(engine.read_text(encoding="utf-8"))
    return {
        "engine_lines": engine.read_text(encoding="utf-8").count("\n"),
        "engine_methods": max(methods(n) for n in ast.walk(etree) if isinstance(n, ast.ClassDef)
                              and n.name == "Engine"),
        "longest": sorted(fns, reverse=True)[:10],
        "over_lines": sum(n > MAX_FUNCTION_LINES for n, _ in fns),
        "big_classes": sorted((c for c in classes if c[0] > MAX_METHODS), reverse=True),
        "local_imports": local,
        "modules": Counter(m.split(".")[1] for m in mods),
        "cycles": {top: c for top, g in graphs.items() if (c := cycles(g))},
    }


def main() -> int:
    repo = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parents[1])
    s = shape(repo)
    print(f"Engine: {s['engine_lines']} lines, {s['engine_methods']} methods")
    print(f"functions over {MAX_FUNCTION_LINES} lines: {s['over_lines']}; the longest:")
    for n, where in s["longest"]:
        print(f"  {n:4}  {where}")
    print(f"classes over {MAX_METHODS} methods: {len(s['big_classes'])}")
    for n, where in s["big_classes"]:
        print(f"  {n:4}  {where}")
    print(f"function-local imports: {s['local_imports']}")
    print("modules per package: " + ", ".join(f"{k} {v}" for k, v in s["modules"].items()))
    print("import cycles inside a package: " + ("none" if not s["cycles"] else "; ".join(
        f"{top}: {' <-> '.join(m.removeprefix('inkling.') for m in c)}"
        for top, cs in s["cycles"].items() for c in cs)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
