"""The workspace on disk: one walk and one watcher over the editor's folders, feeding
every index that wants its files (the symbol index, the drafting suffix index).

Lifecycle (the Engine's side)::

    workspace = Workspace([root, ...], WorkspaceLimits())
    workspace.subscribe(analysis.index)          # a WorkspaceSubscriber each
    workspace.subscribe(drafting_index)
    report = workspace.walk(progress)            # reads every wanted file once, in batches,
                                                 # for the subscribers that have had no walk
    workspace.start()                            # one watchdog observer for all folders
    workspace.set_folders(uris)                  # the editor's folders changed
    workspace.file_changed(path)                 # a change known without the watcher (replay,
                                                 # didChangeWatchedFiles); told once per text
    workspace.stop()

(The Engine makes one, gives it the editor's folders, and ``Engine.prepare``
subscribes, walks and starts it, through ``completion/preparation.py``.)

Subscribers (``WorkspaceSubscriber``) say which files they want and are handed the
files' text in batches (the drafting index tokenizes a batch at once and builds its
index once the walk is done), then single files as they change, and the paths of files
that are gone.

Threads: the walk runs on its caller's thread, the watcher's events on watchdog's
thread, ``file_changed`` on its caller's. Each delivery (one batch of the walk read and
handed out, one event) holds the Workspace's lock, so subscribers are called by one
thread at a time, in the order the files were read: a watcher event never lands between
a batch's reading and its delivery, so the walk cannot undo a newer change. Subscribers
are read by other threads meanwhile (the Engine's worker), so each guards its own data
with its own lock; they must not block on the Workspace from a query.
"""
from __future__ import annotations

import logging
import os
import threading
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Protocol
from urllib.parse import unquote, urlparse

from .workspace_filter import WorkspaceFilter

# watchdog 7's inotify backend warns when a folder created under a watched one is registered
# twice (its recursive registration races the folder's own creation event: the second
# registration replaces the first, the same watch): harmless, and on the watcher's thread, so
# no caller could catch it. A process-wide filter for exactly that message, set once here.
warnings.filterwarnings("ignore", message=r"Callback with id .* already exists for watch",
                        category=RuntimeWarning)

log = logging.getLogger("inkling.workspace")
Progress = Callable[[str, float], None]
BATCH = 256                      # files read and handed to subscribers at once


@dataclass(frozen=True)
class WorkspaceLimits:
    max_files: int = 20_000                # files read by one walk
    max_file_bytes: int = 1 << 20          # larger files are skipped
    max_total_bytes: int = 256 << 20       # bytes read by one walk


@dataclass(frozen=True)
class WorkspaceFile:
    path: Path                   # absolute, under a root
    text: str


class WorkspaceSubscriber(Protocol):
    def wants(self, path: Path) -> bool:
        """Whether this subscriber takes the file at ``path`` (by its path alone)."""

    def set_roots(self, roots: list[Path]) -> None:
        """The workspace folders (called on subscribing and when they change)."""

    def put_files(self, files: list[WorkspaceFile]) -> None:
        """A batch of a walk; it may be held until ``walk_done``."""

    def walk_done(self) -> None:
        """The walk handed out its last batch."""

    def file_changed(self, file: WorkspaceFile) -> None:
        """One file, new or changed since (it replaces any copy held from a walk)."""

    def remove_files(self, paths: list[Path]) -> None:
        """Files that are gone (or no longer readable); unknown paths are ignored."""


@dataclass
class WalkReport:
    files: int = 0               # files read and handed out
    bytes: int = 0
    seconds: float = 0.0
    skipped: dict[str, int] = field(default_factory=dict)    # reason -> count

    def skip(self, reason: str, n: int = 1) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + n

    def summary(self) -> str:
        skipped = ", ".join(f"{n} {why}" for why, n in sorted(self.skipped.items())) or "none"
        return f"indexed {self.files} files in {self.seconds:.2f} s; skipped: {skipped}"


def read_text(path: Path, max_bytes: int) -> tuple[str | None, str]:
    """(text, "") or (None, why the file was skipped)."""
    try:
        if path.is_symlink():
            return None, "symlinks"
        if path.stat().st_size > max_bytes:
            return None, "huge files"
        data = path.read_bytes()
    except FileNotFoundError:
        return None, "vanished files"
    except OSError:
        return None, "unreadable files"
    if b"\0" in data[:8192]:
        return None, "binary files"
    try:
        return data.decode("utf-8"), ""
    except UnicodeDecodeError:
        return None, "non-UTF-8 files"


def local_path(uri_or_path) -> Path | None:
    """A ``file:`` URI or a path, resolved; None for other URIs."""
    if isinstance(uri_or_path, Path):
        return uri_or_path.resolve()
    s = str(uri_or_path)
    if s.startswith("file:"):
        return Path(unquote(urlparse(s).path)).resolve()
    if "://" in s:
        return None
    return Path(s).resolve()


class Workspace:
    """The folders, their filter, the files handed out, one walk, one watcher."""

    def __init__(self, folders: Iterable = (), limits: WorkspaceLimits = WorkspaceLimits()):
        self.limits = limits
        self._lock = threading.RLock()           # one delivery at a time (see the module doc)
        self._roots: list[Path] = []
        self._filter = WorkspaceFilter([])
        self._subscribers: list[WorkspaceSubscriber] = []
        self._fed: list[WorkspaceSubscriber] = []   # those a walk has handed the files to
        self._known: dict[Path, int] = {}        # files handed out (not removed): text hash
        self._observer = None
        self.report = WalkReport()               # the last walk's
        self.walks = 0
        self._set_roots(folders)

    # ----------------------------------------------------------------- setup
    @property
    def folders(self) -> list[Path]:
        return list(self._roots)

    def subscribe(self, subscriber: WorkspaceSubscriber) -> None:
        """Add a subscriber; it is told the folders now and gets the files from the next
        walk (one that comes after the first catches up alone at the next)."""
        with self._lock:
            if subscriber not in self._subscribers:
                self._subscribers.append(subscriber)
                subscriber.set_roots(self.folders)

    def unsubscribe(self, subscriber: WorkspaceSubscriber) -> None:
        with self._lock:
            if subscriber in self._subscribers:
                self._subscribers.remove(subscriber)
            if subscriber in self._fed:
                self._fed.remove(subscriber)

    @property
    def subscribers(self) -> list[WorkspaceSubscriber]:
        return list(self._subscribers)

    def set_folders(self, folders: Iterable, progress: Progress | None = None) -> WalkReport:
        """The editor's folders changed: files under a folder dropped leave every
        subscriber, a folder added is walked (and watched, if the watcher runs)."""
        with self._lock:
            old = set(self._roots)
            self._set_roots(folders)
            gone = [p for p in self._known if self._filter.root_of(p) is None]
            self._remove(gone)
            for s in self._subscribers:
                s.set_roots(self.folders)
            added = [r for r in self._roots if r not in old]
        if self._observer is not None:
            self.stop()
            self.start()
        return self._walk(added, list(self._fed), progress)

    def _set_roots(self, folders: Iterable) -> None:
        roots = []
        for f in folders:
            root = local_path(f)
            if root is not None and root.is_dir() and root not in roots:
                roots.append(root)
        self._roots = roots
        self._filter = WorkspaceFilter(roots)

    # ------------------------------------------------------------------- walk
    def walk(self, progress: Progress | None = None) -> WalkReport:
        """Read every wanted file of every folder once, within the limits, and hand them
        out in batches to the subscribers that have not had them (all, the first time;
        one subscribed since catches up alone; none: nothing is read). Reports progress
        as (message, fraction); returns what was read and what was skipped, and why."""
        with self._lock:
            new = [s for s in self._subscribers if s not in self._fed]
            self._fed.extend(new)
            self.walks += 1
        report = self._walk(self.folders, new, progress)
        self.report = report
        return report

    @property
    def walked(self) -> bool:
        return self.walks > 0

    @property
    def waiting(self) -> bool:
        """Whether a subscriber has not had a walk yet."""
        return any(s not in self._fed for s in self._subscribers)

    def _walk(self, roots: list[Path], subscribers: list, progress: Progress | None
              ) -> WalkReport:
        t0, report = time.perf_counter(), WalkReport()
        if subscribers and roots:
            with self._lock:
                paths = list(dict.fromkeys(      # in order; nested roots give a path once
                    p for root in roots for p in self._candidates(root, report)
                    if any(s.wants(p) for s in subscribers)))
            self._read_all(paths, subscribers, report, progress)
            with self._lock:
                for s in subscribers:
                    _quietly(s.walk_done)
        report.seconds = time.perf_counter() - t0
        if subscribers:
            log.info("workspace: %s", report.summary())
        if progress:
            progress(report.summary(), 1.0)
        return report

    def _candidates(self, root: Path, report: WalkReport):
        """Paths under ``root`` the filter passes: a folder's files by name, then its
        folders depth first by name; symbolic links are not followed."""
        stack = [root]
        while stack:
            folder = stack.pop()
            try:
                entries = sorted(os.scandir(folder), key=lambda e: e.name)
            except OSError:
                report.skip("unreadable folders")
                continue
            dirs = []
            for entry in entries:
                path = Path(entry.path)
                try:
                    if entry.is_symlink():
                        if not entry.is_dir():
                            report.skip("symlinks")
                    elif entry.is_dir():
                        if not self._filter.ignored_dir(path):
                            dirs.append(path)
                    elif entry.is_file():
                        if self._filter.gitignored(path, False):
                            report.skip("ignored files")
                        else:
                            yield path
                except OSError:
                    report.skip("unreadable files")
            stack.extend(reversed(dirs))

    def _read_all(self, paths: list[Path], subscribers: list, report: WalkReport,
                  progress: Progress | None) -> None:
        limits = self.limits
        if len(paths) > limits.max_files:
            report.skip("files over the file budget", len(paths) - limits.max_files)
            paths = paths[:limits.max_files]
        for i in range(0, len(paths), BATCH):
            if progress:
                progress(f"reading {i}/{len(paths)} files", i / max(1, len(paths)))
            with self._lock:
                batch = []
                for path in paths[i:i + BATCH]:
                    text, why = read_text(path, limits.max_file_bytes)
                    if text is None:
                        report.skip(why)
                    elif report.bytes + len(text) > limits.max_total_bytes:
                        report.skip("files over the byte budget")
                    else:
                        report.bytes += len(text)
                        batch.append(WorkspaceFile(path, text))
                report.files += len(batch)
                self._deliver(batch, subscribers)

    def _deliver(self, files: list[WorkspaceFile], subscribers: list) -> None:
        for s in subscribers:
            wanted = [f for f in files if s.wants(f.path)]
            if wanted:
                _quietly(s.put_files, wanted)
        self._known.update((f.path, hash(f.text)) for f in files)

    def _remove(self, paths: list[Path]) -> None:
        if paths:
            for s in self._subscribers:
                _quietly(s.remove_files, list(paths))
            for p in paths:
                self._known.pop(p, None)

    # ---------------------------------------------------------------- changes
    def file_changed(self, path) -> bool:
        """Read ``path`` again (it changed, appeared or vanished) and tell the subscribers
        if its text is not what they have (the watcher and an explicit call may both
        report one change); what the watcher does for each file event, callable without
        it (the replay). False when the file is not the workspace's or could not be read
        (then removed)."""
        with self._lock:
            path = self._locate(path)
            if path is None:
                return False
            if path.name == ".gitignore":
                self._filter.forget(path.parent)
            if not self._filter.wanted_path(path):
                return False
            takers = [s for s in self._subscribers if s.wants(path)]
            if not takers:
                return False
            text, _ = read_text(path, self.limits.max_file_bytes)
            if text is None:
                self._remove([path])
                return False
            if self._known.get(path) == hash(text):
                return True                      # told already
            file = WorkspaceFile(path, text)
            for s in takers:
                _quietly(s.file_changed, file)
            self._known[path] = hash(text)
            return True

    def file_removed(self, path) -> None:
        """``path`` (a file or a folder) is gone: its files leave every subscriber."""
        with self._lock:
            path = self._locate(path)
            if path is None:
                return
            self._remove([p for p in self._known if p == path or path in p.parents]
                         or [path])

    def folder_added(self, folder) -> WalkReport:
        """A folder appeared inside a root (created or moved there): walk it."""
        with self._lock:
            folder = self._locate(folder)
            if folder is None or not self._filter.wanted_folder(folder):
                return WalkReport()
            return self._walk([folder], list(self._fed), None)

    def _locate(self, path) -> Path | None:
        """``path`` made absolute, its folder's links resolved as the roots' are; None
        when it is under no root."""
        p = Path(os.path.abspath(path))
        if self._filter.root_of(p) is not None:
            return p
        p = p.parent.resolve() / p.name
        return p if self._filter.root_of(p) is not None else None

    def files(self) -> list[Path]:
        """The files handed out and not removed since."""
        with self._lock:
            return sorted(self._known)

    # ---------------------------------------------------------------- watcher
    def start(self) -> bool:
        """Follow the folders on disk with one watchdog observer; False when it cannot
        (no inotify watches left, watchdog missing): the indexes then change only through
        ``file_changed``."""
        if self._observer is not None:
            return True
        try:
            from watchdog.observers import Observer
            observer = Observer()
            observer.daemon = True
            handler = _Handler(self)
            for root in self.folders:
                observer.schedule(handler, str(root), recursive=True)
            observer.start()
        except Exception:            # noqa: BLE001
            log.exception("cannot watch %s; files changed on disk will not be re-indexed",
                          ", ".join(map(str, self.folders)))
            return False
        self._observer = observer
        return True

    @property
    def watching(self) -> bool:
        return self._observer is not None

    def stop(self) -> None:
        """Stop the watcher (not under the lock: its thread may be waiting for it)."""
        observer, self._observer = self._observer, None
        if observer is not None:
            observer.stop()
            observer.join(timeout=2)

    def _on_event(self, event) -> None:
        kind = event.event_type
        if kind not in ("created", "modified", "moved", "deleted"):
            return                   # opened, closed: the modification was seen already
        src = Path(os.fsdecode(event.src_path))
        if event.is_directory:
            if kind in ("deleted", "moved"):
                self.file_removed(src)
            if kind == "moved":
                self.folder_added(Path(os.fsdecode(event.dest_path)))
            elif kind == "created":
                self.folder_added(src)
            return
        if kind == "moved":
            self.file_removed(src)
            self.file_changed(Path(os.fsdecode(event.dest_path)))
        elif kind == "deleted":
            self.file_removed(src)
        else:
            self.file_changed(src)


def _quietly(call, *args) -> None:
    """A subscriber's failure is logged; the others (and the watcher thread) go on."""
    try:
        call(*args)
    except Exception:                # noqa: BLE001
        log.exception("workspace subscriber %s failed", getattr(call, "__qualname__", call))


def _handler_base():
    from watchdog.events import FileSystemEventHandler
    return FileSystemEventHandler


class _Handler(_handler_base()):
    """Hands watchdog's events (on its thread) to the Workspace."""

    def __init__(self, workspace: Workspace):
        super().__init__()
        self.workspace = workspace

    def on_any_event(self, event) -> None:
        try:
            self.workspace._on_event(event)
        except Exception:            # noqa: BLE001 - the watcher thread must live on
            log.exception("while handling %s", event)
