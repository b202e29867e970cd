"""What the modules outside the workspace define: the standard library's, parsed on first
use (the last ``max_modules`` used are kept), and the top-level names of the installed
packages (read once). Thread-safe: its own lock guards the parsed modules (the Engine's
worker and the Workspace's threads may both ask); a module is parsed outside the lock."""
from __future__ import annotations

import os
import pkgutil
import site
import threading
from collections import OrderedDict
from pathlib import Path

from inkling.analysis.python_parsers import PythonParsers
from inkling.analysis.stdlib_modules import StdlibModules
from inkling.analysis.symbols import FileSymbols


class LibrarySymbols:
    def __init__(self, stdlib: StdlibModules, parsers: PythonParsers, max_modules: int):
        self.stdlib, self.parsers, self.max_modules = stdlib, parsers, max_modules
        self._lock = threading.Lock()
        self._parsed: OrderedDict = OrderedDict()  # name -> FileSymbols | None (no module)
        self._installed: frozenset | None = None

    def module(self, name: str) -> FileSymbols | None:
        """What stdlib module ``name`` defines (None: no such module), parsed once."""
        with self._lock:
            if name in self._parsed:
                self._parsed.move_to_end(name)
                return self._parsed[name]
        symbols = self._read(name)
        with self._lock:
            self._parsed[name] = symbols
            while len(self._parsed) > self.max_modules:
                self._parsed.popitem(last=False)
        return symbols

    def _read(self, name: str) -> FileSymbols | None:
        found = self.stdlib.source(name)
        if found is not None:
            path, package = found
            try:
                return self.parsers.parse(path.read_bytes(), name, str(path), package)
            except OSError:
                return FileSymbols.unknown(name, str(path))
        names = self.stdlib.extension_names(name)
        return FileSymbols(name, names=names) if names is not None else None

    def seen(self, name: str) -> bool | None:
        """Whether ``name`` was found a module when last asked; None when not asked (or
        no longer kept)."""
        with self._lock:
            return self._parsed[name] is not None if name in self._parsed else None

    def exists(self, name: str) -> bool:
        """Whether ``name`` is a stdlib module or C module (without parsing it)."""
        return self.stdlib.source(name) is not None or \
            self.stdlib.extension_names(name) is not None

    def installed(self) -> frozenset[str]:
        """The top-level modules of the installed packages (``installed_paths``), read once."""
        if self._installed is None:
            try:
                self._installed = frozenset(m.name for m in pkgutil.iter_modules(
                    [str(p) for p in installed_paths()]))
            except Exception:        # noqa: BLE001 - a broken path entry
                self._installed = frozenset()
        return self._installed


def installed_paths() -> list[Path]:
    """The environment's site-packages folders, the folders their ``.pth`` files add, and
    PYTHONPATH's: not the process's working folder or the folders a script put on
    ``sys.path``, which are inkling's own and would make suggestions depend on how it runs."""
    sites = [Path(p) for p in site.getsitepackages()]
    if site.ENABLE_USER_SITE:
        sites.append(Path(site.getusersitepackages()))
    found = [p for p in sites if p.is_dir()]
    for folder in list(found):
        for pth in sorted(folder.glob("*.pth")):
            try:
                lines = pth.read_text(encoding="utf-8", errors="replace").splitlines()
            except OSError:
                continue
            found += [(folder / line.strip()).resolve() for line in lines
                      if line.strip() and not line.startswith(("#", "import ", "import\t"))
                      and (folder / line.strip()).is_dir()]
    found += [Path(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    return list(dict.fromkeys(found))
