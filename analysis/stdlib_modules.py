"""The standard library of the running interpreter: module names, source files, and the
names of its C modules (which have no source to parse)."""
from __future__ import annotations

import importlib
import sys
import sysconfig
from dataclasses import dataclass, field
from pathlib import Path

_SKIP = {"site-packages", "__pycache__", "test", "idlelib", "lib2to3", "turtledemo", "ensurepip"}


@dataclass
class StdlibModules:
    root: Path = field(default_factory=lambda: Path(sysconfig.get_paths()["stdlib"]))
    introspect: bool = True
    _top: frozenset | None = field(default=None, repr=False)
    _extensions: dict = field(default_factory=dict, repr=False)

    def source(self, module: str) -> tuple[Path, bool] | None:
        """(source path, is a package) of a pure-Python stdlib module, or None."""
        if not module or module.split(".")[0] in ("site-packages",):
            return None
        base = self.root.joinpath(*module.split("."))
        init = base / "__init__.py"
        if init.is_file():
            return init, True
        py = base.with_suffix(".py")
        if py.is_file():
            return py, False
        return None

    def submodules(self, package: str) -> frozenset[str]:
        src = self.source(package)
        if src is None or not src[1]:
            return frozenset()
        return _module_names(src[0].parent)

    def top_level(self) -> frozenset[str]:
        """Top-level stdlib module names: sources, packages and C modules."""
        if self._top is None:
            names = set(_module_names(self.root)) - _SKIP
            names.update(sys.builtin_module_names)
            names.update(_module_names(self.root / "lib-dynload"))
            self._top = frozenset(names)
        return self._top

    def extension_names(self, module: str) -> frozenset[str] | None:
        """Names a stdlib C module defines (by importing it), or None when not one."""
        if module in self._extensions:
            return self._extensions[module]
        names = None
        if self.introspect and self._is_extension(module):
            try:
                names = frozenset(dir(importlib.import_module(module)))
            except Exception:            # noqa: BLE001 - any failure: unknown module
                names = None
        self._extensions[module] = names
        return names

    def _is_extension(self, module: str) -> bool:
        if module in sys.builtin_module_names:
            return True
        if "." in module:
            return False
        dynload = self.root / "lib-dynload"
        try:
            return any(p.name.split(".")[0] == module for p in dynload.glob(module + ".*"))
        except OSError:
            return False


def _module_names(folder: Path) -> frozenset[str]:
    names = set()
    try:
        for p in folder.iterdir():
            if p.suffix == ".py" or p.suffix == ".so" or p.suffix == ".pyd":
                stem = p.name.split(".")[0]
                if stem.isidentifier() and stem != "__init__":
                    names.add(stem)
            elif p.is_dir() and p.name.isidentifier() and (p / "__init__.py").is_file():
                names.add(p.name)
    except OSError:
        pass
    return frozenset(names)
