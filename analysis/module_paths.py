"""Dotted module names of files under workspace roots."""
from __future__ import annotations

from pathlib import Path

SOURCE_ROOT_NAMES = ("src", "lib")


def module_names(path: Path, roots: list[Path]) -> list[str]:
    """The module names ``path`` is importable as from ``roots`` (``src/`` layouts give the
    name without ``src`` too); ``pkg/__init__.py`` is ``pkg``. Longest root first."""
    out = []
    for root in sorted(roots, key=lambda r: len(r.parts), reverse=True):
        try:
            parts = list(path.relative_to(root).parts)
        except ValueError:
            continue
        name = _dotted(parts)
        if name:
            out.append(name)
            if parts[0] in SOURCE_ROOT_NAMES and len(parts) > 1:
                inner = _dotted(parts[1:])
                if inner:
                    out.append(inner)
        break
    return out


def is_package_file(path: Path) -> bool:
    return path.stem == "__init__"


def _dotted(parts: list[str]) -> str:
    if not parts:
        return ""
    last = parts[-1]
    stem = last.split(".")[0]
    parts = parts[:-1] + ([] if stem == "__init__" else [stem])
    if not parts or not all(p.isidentifier() for p in parts):
        return ""
    return ".".join(parts)


def resolve_relative(current: str, is_package: bool, module: str, level: int) -> str:
    """The absolute name of ``from <level dots><module> import`` inside module ``current``."""
    if level == 0:
        return module
    parts = current.split(".") if current else []
    if not is_package:
        parts = parts[:-1]
    if level > 1:
        parts = parts[:len(parts) - (level - 1)] if level - 1 <= len(parts) else []
    base = ".".join(parts)
    return f"{base}.{module}" if base and module else (base or module)
