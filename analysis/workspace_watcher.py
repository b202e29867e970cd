"""Follows workspace folders on disk with watchdog and keeps the symbol index current."""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

from .symbol_index import SymbolIndex
from .workspace_filter import SOURCE_SUFFIXES

log = logging.getLogger(__name__)


@dataclass
class WorkspaceWatcher:
    index: SymbolIndex
    _observer: object = field(default=None, repr=False)
    _watched: set = field(default_factory=set, repr=False)

    def watch(self, root: Path) -> bool:
        """Start following ``root`` (recursively); False when watchdog cannot."""
        root = Path(root).resolve()
        if root in self._watched:
            return True
        try:
            from watchdog.observers import Observer
            if self._observer is None:
                self._observer = Observer()
                self._observer.daemon = True
                self._observer.start()
            self._observer.schedule(_Handler(self.index), str(root), recursive=True)
            self._watched.add(root)
            return True
        except Exception:            # noqa: BLE001 - no inotify watches left, a gone folder
            log.exception("cannot watch %s; files changed on disk will not be re-indexed", root)
            return False

    def stop(self) -> None:
        if self._observer is not None:
            self._observer.stop()
            self._observer.join(timeout=2)
            self._observer = None
            self._watched.clear()


def _make_handler_base():
    from watchdog.events import FileSystemEventHandler
    return FileSystemEventHandler


class _Handler(_make_handler_base()):
    """Re-indexes a Python file when it is created, changed, moved or deleted."""

    def __init__(self, index: SymbolIndex):
        super().__init__()
        self.index = index

    def on_any_event(self, event) -> None:
        try:
            self._handle(event)
        except Exception:            # noqa: BLE001 - the watcher thread must live on
            log.exception("while handling %s", event)

    def _handle(self, event) -> None:
        kind = event.event_type
        if kind in ("opened", "closed_no_write"):
            return
        src = Path(event.src_path)
        if event.is_directory:
            if kind in ("deleted", "moved"):
                self.index.remove_under(src)
            if kind == "moved":
                self.index.index_root_folder(Path(event.dest_path))
            return
        if kind == "moved":
            self._gone(src)
            self._changed(Path(event.dest_path))
        elif kind == "deleted":
            self._gone(src)
        else:
            self._changed(src)

    def _gone(self, path: Path) -> None:
        if path.suffix in SOURCE_SUFFIXES:
            self.index.remove_file(path)

    def _changed(self, path: Path) -> None:
        if path.suffix in SOURCE_SUFFIXES and self.index.wanted(path):
            self.index.update_file(path)
