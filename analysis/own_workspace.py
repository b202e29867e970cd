"""The Workspace of a CodeAnalysis used alone (the replay's metrics, tests, benchmarks):
made on the first ``set_folders``, subscribed by the analysis's symbol index. (In the
server the Engine's one Workspace feeds the index instead: completion/open_analysis.py.)"""
from __future__ import annotations

import logging
import threading

from inkling.analysis.analysis_options import AnalysisOptions
from inkling.analysis.symbol_index import SymbolIndex
from inkling.analysis.workspace import Workspace, WorkspaceLimits

log = logging.getLogger(__name__)


class OwnWorkspace:
    def __init__(self, index: SymbolIndex, options: AnalysisOptions):
        self.index, self.options = index, options
        self._workspace: Workspace | None = None     # until the first set_folders

    def set_folders(self, folders: list) -> None:
        """Index ``folders`` (URIs or paths), in a background thread when
        ``options.background``, and watch them when ``options.watch``."""
        if self._workspace is None:
            o = self.options
            self._workspace = Workspace((), WorkspaceLimits(o.max_files, o.max_file_bytes,
                                                            o.max_total_bytes))
            self._workspace.subscribe(self.index)
        if self.options.background:
            threading.Thread(target=self._index_quietly, args=(folders,), daemon=True,
                             name="inkling-index").start()
        else:
            self._index_quietly(folders)

    def _index_quietly(self, folders: list) -> None:
        try:
            self._workspace.set_folders(folders)     # walks a folder added since a walk
            self._workspace.walk()                   # the first time
            if self.options.watch:
                self._workspace.start()
        except Exception:            # noqa: BLE001
            log.exception("indexing %s failed", folders)

    def file_changed(self, path) -> None:
        """Re-index one file from disk now (what the watcher does on a change)."""
        if self._workspace is not None:
            self._workspace.file_changed(path)

    def stop(self) -> None:
        if self._workspace is not None:
            self._workspace.stop()
