"""The workspace symbol index: what every indexed file defines, by module name.

Sources: workspace files on disk (handed over by the ``Workspace``, whose subscriber
this is: its walk, then its watcher), open documents (their in-editor symbols win over
the disk), and the standard library (parsed lazily, on first use). Thread-safe: the
Workspace writes (from the walking thread or watchdog's) while the Engine's worker reads.
"""
from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path

from .analysis_options import AnalysisOptions
from .grammars import Grammars
from .module_paths import is_package_file, module_names
from .python_symbols import PythonSymbolExtractor
from .stdlib_modules import StdlibModules
from .symbols import FileSymbols
from .workspace import WorkspaceFile
from .workspace_filter import SOURCE_SUFFIXES

log = logging.getLogger(__name__)


@dataclass
class SymbolIndex:
    options: AnalysisOptions = field(default_factory=AnalysisOptions)
    grammars: Grammars = field(default_factory=Grammars)
    stdlib: StdlibModules | None = None
    _lock: threading.RLock = field(default_factory=threading.RLock, repr=False)
    _roots: list = field(default_factory=list, repr=False)
    _disk: dict = field(default_factory=dict, repr=False)         # Path -> FileSymbols
    _open: dict = field(default_factory=dict, repr=False)         # Path -> FileSymbols
    _paths: dict = field(default_factory=dict, repr=False)        # module -> Path
    _stdlib_cache: OrderedDict = field(default_factory=OrderedDict, repr=False)
    _installed: frozenset | None = field(default=None, repr=False)
    _names: frozenset | None = field(default=None, repr=False)
    _local: threading.local = field(default_factory=threading.local, repr=False)

    def __post_init__(self):
        if self.stdlib is None:
            self.stdlib = StdlibModules(introspect=self.options.introspect_extensions)

    # ------------------------------------------- the workspace (a WorkspaceSubscriber)
    def wants(self, path: Path) -> bool:
        return path.suffix in SOURCE_SUFFIXES

    def set_roots(self, roots: list[Path]) -> None:
        """The workspace folders (module names are relative to them)."""
        with self._lock:
            self._roots = [Path(r).resolve() for r in roots]

    def put_files(self, files: list[WorkspaceFile]) -> None:
        """Index a batch of workspace files (each is queryable at once)."""
        for f in files:
            self._put(f.path, f.text.encode("utf-8"))

    def walk_done(self) -> None:
        pass

    def file_changed(self, file: WorkspaceFile) -> None:
        self._put(file.path, file.text.encode("utf-8"))

    def remove_files(self, paths: list[Path]) -> None:
        for path in paths:
            self.remove_file(path)

    @property
    def roots(self) -> list[Path]:
        with self._lock:
            return list(self._roots)

    def root_of(self, path: Path) -> Path | None:
        with self._lock:
            for root in sorted(self._roots, key=lambda r: len(r.parts), reverse=True):
                if path == root or root in path.parents:
                    return root
        return None

    # ------------------------------------------------------------------ files
    def _put(self, path: Path, data: bytes) -> FileSymbols:
        path = Path(path).resolve()
        names = self.module_names_for(path)
        symbols = self.parse(data, names[0] if names else "", str(path), is_package_file(path))
        with self._lock:
            self._disk[path] = symbols
            for name in names:
                self._paths[name] = path
            self._names = None
        return symbols

    def remove_file(self, path: Path) -> None:
        path = Path(path).resolve()
        with self._lock:
            self._disk.pop(path, None)
            for name in [m for m, p in self._paths.items() if p == path]:
                if path not in self._open:
                    del self._paths[name]
            self._names = None

    def set_document(self, path: Path, symbols: FileSymbols) -> None:
        """An open document's symbols (they win over the file on disk)."""
        path = Path(path).resolve()
        with self._lock:
            self._open[path] = symbols
            for name in self.module_names_for(path):
                self._paths[name] = path
            self._names = None

    def drop_document(self, path: Path) -> None:
        path = Path(path).resolve()
        with self._lock:
            self._open.pop(path, None)
            if path not in self._disk:
                for name in [m for m, p in self._paths.items() if p == path]:
                    del self._paths[name]
            self._names = None

    def module_names_for(self, path: Path) -> list[str]:
        return module_names(Path(path).resolve(), self.roots)

    def parse(self, data: bytes, module: str, path: str = "", is_package: bool = False
              ) -> FileSymbols:
        """FileSymbols of Python source ``data``; never raises (unknown on failure)."""
        if len(data) > self.options.max_symbol_bytes:
            return FileSymbols.unknown(module, path)
        try:
            parser, extractor = self._tools()
            tree = parser.parse(data)
            return extractor.extract(tree.root_node, module, path, is_package)
        except Exception:            # noqa: BLE001 - a broken file must not break analysis
            log.exception("could not index %s", path or module)
            return FileSymbols.unknown(module, path)

    def extractor(self) -> PythonSymbolExtractor:
        return self._tools()[1]

    def _tools(self):
        """A parser and extractor for the calling thread (parsers are not thread-safe)."""
        tools = getattr(self._local, "tools", None)
        if tools is None:
            lang = self.grammars.language("python")
            from tree_sitter import Parser
            tools = self._local.tools = (Parser(lang), PythonSymbolExtractor(lang))
        return tools

    # ---------------------------------------------------------------- modules
    def module(self, name: str) -> FileSymbols | None:
        """What module ``name`` defines: workspace first, then the standard library."""
        with self._lock:
            path = self._paths.get(name)
            if path is not None:
                return self._open.get(path) or self._disk.get(path)
            if name in self._stdlib_cache:
                self._stdlib_cache.move_to_end(name)
                return self._stdlib_cache[name]
        symbols = self._stdlib_module(name)
        with self._lock:
            self._stdlib_cache[name] = symbols
            while len(self._stdlib_cache) > self.options.max_stdlib_modules:
                self._stdlib_cache.popitem(last=False)
        return symbols

    def _stdlib_module(self, name: str) -> FileSymbols | None:
        found = self.stdlib.source(name)
        if found is not None:
            path, package = found
            try:
                return self.parse(path.read_bytes(), name, str(path), package)
            except OSError:
                return FileSymbols.unknown(name, str(path))
        names = self.stdlib.extension_names(name)
        return FileSymbols(name, names=names) if names is not None else None

    def has_module(self, name: str) -> bool:
        """Whether ``name`` is a workspace, stdlib or stdlib C module (without parsing it)."""
        with self._lock:
            if name in self._paths or name in self._stdlib_cache:
                return self._stdlib_cache.get(name, True) is not None
        return self.stdlib.source(name) is not None or \
            self.stdlib.extension_names(name) is not None

    def submodules(self, package: str) -> frozenset[str]:
        """Names of the direct submodules of ``package`` (workspace and stdlib)."""
        prefix = package + "."
        with self._lock:
            ours = {m[len(prefix):].split(".")[0] for m in self._paths if m.startswith(prefix)}
        return frozenset(ours) | self.stdlib.submodules(package)

    def top_level_modules(self) -> frozenset[str]:
        """Every importable top-level name: workspace, stdlib and installed packages."""
        with self._lock:
            ours = {m.split(".")[0] for m in self._paths}
        return frozenset(ours) | self.stdlib.top_level() | self._installed_modules()

    def _installed_modules(self) -> frozenset[str]:
        if self._installed is None:
            import pkgutil
            try:
                self._installed = frozenset(m.name for m in pkgutil.iter_modules())
            except Exception:        # noqa: BLE001 - a broken sys.path entry
                self._installed = frozenset()
        return self._installed

    def workspace_names(self) -> frozenset[str]:
        """Every name bound anywhere in an indexed workspace file or open document."""
        with self._lock:
            if self._names is None:
                names = set()
                for s in list(self._disk.values()) + list(self._open.values()):
                    names |= s.all_names
                self._names = frozenset(names)
            return self._names

    def files(self) -> list[Path]:
        with self._lock:
            return sorted(set(self._disk) | set(self._open))
