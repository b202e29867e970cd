"""ARCHITECTURE.md names real modules: every module it names exists, and the path of one
completion names every module the Engine and the decode plan import."""
from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DOC = (REPO / "ARCHITECTURE.md").read_text(encoding="utf-8")
PATHED = re.compile(r"`?((?:[a-z_]+/)+[a-z_0-9]+\.py)")
BARE = re.compile(r"(?<![/\w])([a-z_0-9]+\.py)\b")


def _all_modules() -> set[str]:
    return {p.relative_to(REPO).as_posix() for p in REPO.rglob("*.py")
            if ".venv" not in p.parts and "build" not in p.parts}


def test_every_module_named_exists():
    modules = _all_modules()
    names = {m.rsplit("/", 1)[-1] for m in modules}
    missing = []
    for path in PATHED.findall(DOC):
        # a path is from the repository's top, or from one of the packages' folders
        if path not in modules and not any(m.endswith("/" + path) for m in modules):
            missing.append(path)
    missing += [n for n in BARE.findall(DOC) if n not in names]
    assert not missing, f"ARCHITECTURE.md names modules that do not exist: {sorted(set(missing))}"


def _internal_imports(path: Path) -> set[str]:
    """The repository paths of the inkling modules ``path`` imports."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("inkling."):
            base = node.module.split(".")[1:]
            for alias in node.names:
                for parts in (base + [alias.name], base):
                    f = REPO.joinpath(*parts).with_suffix(".py")
                    if f.is_file():
                        out.add(f.relative_to(REPO).as_posix())
                        break
    return out


def test_the_path_of_a_completion_names_what_the_engine_and_the_plan_import():
    path_section = DOC.split("## The path of one completion", 1)[1].split("\n## ", 1)[0]
    named = {m.rsplit("/", 1)[-1] for m in PATHED.findall(path_section)} | \
        set(BARE.findall(path_section))
    sources = [REPO / "completion" / "engine.py", REPO / "completion" / "decoding" / "plan.py"]
    imported = set().union(*(_internal_imports(s) for s in sources if s.is_file()))
    unnamed = sorted(m for m in imported if m.rsplit("/", 1)[-1] not in named
                     and not m.endswith("__init__.py"))
    assert not unnamed, f"the path of one completion does not name: {unnamed}"
