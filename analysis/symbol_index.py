"""The symbol index: what every workspace file, open document (it wins over the disk) and
library module (parsed lazily) defines, by module name. The Workspace writes from its threads
while the Engine's worker reads; the index's lock guards its tables, parsing runs outside it.
"""
from __future__ import annotations

import threading
from pathlib import Path

from inkling.analysis.analysis_options import AnalysisOptions
from inkling.analysis.grammars import Grammars
from inkling.analysis.library_symbols import LibrarySymbols
from inkling.analysis.module_paths import is_package_file, module_names
from inkling.analysis.python_parsers import PythonParsers
from inkling.analysis.stdlib_modules import StdlibModules
from inkling.analysis.symbols import FileSymbols
from inkling.analysis.workspace import WorkspaceFile
from inkling.analysis.workspace_filter import SOURCE_SUFFIXES


class SymbolIndex:
    def __init__(self, options: AnalysisOptions | None = None, grammars: Grammars | None = None):
        self.options = options or AnalysisOptions()
        self.grammars = grammars or Grammars()
        self.parsers = PythonParsers(self.grammars, self.options.max_symbol_bytes)
        self.library = LibrarySymbols(StdlibModules(introspect=self.options.introspect_extensions),
                                      self.parsers, self.options.max_stdlib_modules)
        self._lock = threading.RLock()      # guards the five below
        self._roots: list[Path] = []
        self._disk: dict[Path, FileSymbols] = {}
        self._open: dict[Path, FileSymbols] = {}
        self._paths: dict[str, Path] = {}   # module name -> its file
        self._names: frozenset | None = None    # workspace_names, until a file changes
        self._resolved: dict[str, Path] = {}    # a path as given -> resolved

    # ------------------------------------------- the workspace (a WorkspaceSubscriber)
    def wants(self, path: Path) -> bool:
        return path.suffix in SOURCE_SUFFIXES

    def set_roots(self, roots: list[Path]) -> None:
        """The workspace folders (module names are relative to them)."""
        with self._lock:
            self._roots = [Path(r).resolve() for r in roots]
            self._resolved.clear()

    def put_files(self, files: list[WorkspaceFile]) -> None:
        """Index a batch of workspace files (each is queryable at once)."""
        for f in files:
            path = Path(f.path).resolve()
            names = self.module_names_for(path)
            symbols = self.parsers.parse(f.text.encode("utf-8"), names[0] if names else "",
                                         str(path), is_package_file(path))
            with self._lock:
                self._disk[path] = symbols
                for name in names:
                    self._paths[name] = path
                self._names = None

    def walk_done(self) -> None:
        pass

    def file_changed(self, file: WorkspaceFile) -> None:
        self.put_files([file])

    def remove_files(self, paths: list[Path]) -> None:
        for path in paths:
            path = Path(path).resolve()
            with self._lock:
                self._disk.pop(path, None)
                for name in [m for m, p in self._paths.items() if p == path]:
                    if path not in self._open:
                        del self._paths[name]
                self._names = None

    # ------------------------------------------------------------- documents
    def set_document(self, path: Path, symbols: FileSymbols) -> None:
        """An open document's symbols, which win over the disk; ``workspace_names`` is rebuilt
        only when the document's bound names changed."""
        path = self._resolve(path)
        with self._lock:
            old = self._open.get(path)
            self._open[path] = symbols
            for name in self.module_names_for(path):
                self._paths[name] = path
            if old is None or old.all_names != symbols.all_names:
                self._names = None

    def drop_document(self, path: Path) -> None:
        path = self._resolve(path)
        with self._lock:
            self._open.pop(path, None)
            if path not in self._disk:
                for name in [m for m, p in self._paths.items() if p == path]:
                    del self._paths[name]
            self._names = None

    # ---------------------------------------------------------------- paths
    def module_names_for(self, path: Path) -> list[str]:
        with self._lock:
            roots = list(self._roots)
        return module_names(self._resolve(path), roots)

    def _resolve(self, path: Path) -> Path:
        """``Path(path).resolve()``, kept per path as given (until the roots change)."""
        key = str(path)
        with self._lock:
            found = self._resolved.get(key)
            if found is None:
                found = self._resolved[key] = Path(path).resolve()
            return found

    def root_of(self, path: Path) -> Path | None:
        with self._lock:
            for root in sorted(self._roots, key=lambda r: len(r.parts), reverse=True):
                if path == root or root in path.parents:
                    return root
        return None

    def files(self) -> list[Path]:
        with self._lock:
            return sorted(set(self._disk) | set(self._open))

    # ---------------------------------------------------------------- modules
    def module(self, name: str) -> FileSymbols | None:
        """What module ``name`` defines: workspace first, then the standard library."""
        with self._lock:
            path = self._paths.get(name)
            if path is not None:
                return self._open.get(path) or self._disk.get(path)
        return self.library.module(name)

    def has_module(self, name: str) -> bool:
        """Whether ``name`` is a workspace or stdlib module, without parsing it; a name the
        library found missing stays missing."""
        seen = self.library.seen(name)
        if seen is not None:
            return seen
        with self._lock:
            if name in self._paths:
                return True
        return self.library.exists(name)

    def submodules(self, package: str) -> frozenset[str]:
        """Names of the direct submodules of ``package`` (workspace and stdlib)."""
        prefix = package + "."
        with self._lock:
            ours = {m[len(prefix):].split(".")[0] for m in self._paths if m.startswith(prefix)}
        return frozenset(ours) | self.library.stdlib.submodules(package)

    def top_level_modules(self) -> frozenset[str]:
        """Every importable top-level name: workspace, stdlib and installed packages."""
        with self._lock:
            ours = {m.split(".")[0] for m in self._paths}
        return frozenset(ours) | self.library.stdlib.top_level() | self.library.installed()

    def workspace_names(self) -> frozenset[str]:
        """Every name bound anywhere in an indexed workspace file or open document."""
        with self._lock:
            if self._names is None:
                names = set()
                for s in list(self._disk.values()) + list(self._open.values()):
                    names |= s.all_names
                self._names = frozenset(names)
            return self._names
