"""One watchdog observer over the workspace's folders: its events, on watchdog's thread,
become the Workspace's ``file_changed`` / ``file_removed`` / ``folder_added`` (which take
the Workspace's lock). ``start`` and ``stop`` run on their callers' threads; ``stop`` does
not hold that lock (the watcher's thread may be waiting for it)."""
from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Protocol

from watchdog.events import FileSystemEvent, FileSystemEventHandler

log = logging.getLogger("inkling.workspace")


class FileEvents(Protocol):
    """What the watcher tells (the Workspace)."""

    def file_changed(self, path) -> bool: ...

    def file_removed(self, path) -> None: ...

    def folder_added(self, folder) -> object: ...


class WorkspaceWatcher:
    def __init__(self, target: FileEvents):
        self.target = target
        self._observer = None            # watchdog's Observer while watching

    def start(self, folders: list[Path]) -> bool:
        """Watch ``folders`` (recursively), unless watching already; False when it cannot
        (no inotify watches left, watchdog missing)."""
        if self._observer is not None:
            return True
        try:
            # only a watched workspace needs the observers (the server starts without them)
            # lazy: watchdog.observers is slow to import
            from watchdog.observers import Observer
            observer = Observer()
            observer.daemon = True
            handler = _Handler(self.target)
            for root in folders:
                observer.schedule(handler, str(root), recursive=True)
            observer.start()
        except Exception:            # noqa: BLE001
            log.exception("cannot watch %s; files changed on disk will not be re-indexed",
                          ", ".join(map(str, folders)))
            return False
        self._observer = observer
        return True

    def restart(self, folders: list[Path]) -> None:
        """Watch ``folders`` instead, if watching."""
        if self._observer is not None:
            self.stop()
            self.start(folders)

    def stop(self) -> None:
        observer, self._observer = self._observer, None
        if observer is not None:
            observer.stop()
            observer.join(timeout=2)


def dispatch(event: FileSystemEvent, target: FileEvents) -> None:
    """What a file or folder event means to ``target``."""
    kind = event.event_type
    if kind not in ("created", "modified", "moved", "deleted"):
        return                   # opened, closed: the modification was seen already
    src = Path(os.fsdecode(event.src_path))
    if event.is_directory:
        if kind in ("deleted", "moved"):
            target.file_removed(src)
        if kind == "moved":
            target.folder_added(Path(os.fsdecode(event.dest_path)))
        elif kind == "created":
            target.folder_added(src)
        return
    if kind == "moved":
        target.file_removed(src)
        target.file_changed(Path(os.fsdecode(event.dest_path)))
    elif kind == "deleted":
        target.file_removed(src)
    else:
        target.file_changed(src)


class _Handler(FileSystemEventHandler):
    """Hands watchdog's events (on its thread) to the target."""

    def __init__(self, target: FileEvents):
        super().__init__()
        self.target = target

    def on_any_event(self, event: FileSystemEvent) -> None:
        try:
            dispatch(event, self.target)
        except Exception:            # noqa: BLE001 - the watcher thread must live on
            log.exception("while handling %s", event)
