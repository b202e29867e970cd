"""The workspace symbol index: what every indexed file defines, by module name.

Sources: workspace files on disk (indexed per folder within a budget, then kept up to
date by the watcher), open documents (their in-editor symbols win over the disk), and
the standard library (parsed lazily, on first use). Thread-safe: the watcher and a
background indexer write while the Engine's worker reads.
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
from .workspace_filter import WorkspaceFilter
from .workspace_scan import ScanResult, scan_folder

log = logging.getLogger(__name__)


@dataclass
class SymbolIndex:
    options: AnalysisOptions = field(default_factory=AnalysisOptions)
    grammars: Grammars = field(default_factory=Grammars)
    stdlib: StdlibModules | None = None
    _lock: threading.RLock = field(default_factory=threading.RLock, repr=False)
    _roots: list = field(default_factory=list, repr=False)
    _filters: dict = field(default_factory=dict, repr=False)
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

    # ------------------------------------------------------------------ roots
    def add_root(self, root: Path) -> None:
        root = Path(root).resolve()
        with self._lock:
            if root not in self._roots:
                self._roots.append(root)
                self._filters[root] = WorkspaceFilter(root, self.options.max_file_bytes)

    @property
    def roots(self) -> list[Path]:
        with self._lock:
            return list(self._roots)

    def index_root(self, root: Path) -> ScanResult:
        """Index every wanted file under ``root`` (added as a root first)."""
        self.add_root(root)
        root = Path(root).resolve()
        o = self.options
        found = scan_folder(root, self._filters[root], o.max_files, o.max_total_bytes)
        for path in found.files:
            self.update_file(path)
        if found.truncated:
            log.info("indexing %s stopped at its budget (%d files, %d bytes)", root,
                     len(found.files), found.bytes)
        return found

    def index_root_folder(self, folder: Path) -> None:
        """Index a folder inside a root (one moved there on disk)."""
        root = self.root_of(Path(folder))
        if root is None:
            return
        o = self.options
        for path in scan_folder(Path(folder), self._filters[root], o.max_files,
                                o.max_total_bytes).files:
            if self._filters[root].wanted_file(path):
                self.update_file(path)

    def root_of(self, path: Path) -> Path | None:
        with self._lock:
            for root in sorted(self._roots, key=lambda r: len(r.parts), reverse=True):
                if path == root or root in path.parents:
                    return root
        return None

    def wanted(self, path: Path) -> bool:
        path = Path(path).resolve()
        root = self.root_of(path)
        return root is not None and self._filters[root].wanted_file(path)

    # ------------------------------------------------------------------ files
    def update_file(self, path: Path) -> FileSymbols | None:
        """(Re)index one file from disk; a file that is gone is removed."""
        path = Path(path).resolve()
        try:
            data = path.read_bytes()
        except OSError:
            self.remove_file(path)
            return None
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

    def remove_under(self, folder: Path) -> None:
        folder = Path(folder).resolve()
        with self._lock:
            gone = [p for p in self._disk if folder in p.parents]
        for p in gone:
            self.remove_file(p)

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
