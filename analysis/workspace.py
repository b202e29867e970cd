"""The workspace on disk: one walk and one watcher over the editor's folders, feeding every
index that wants its files (``WorkspaceSubscriber``: batches from the walk, then single changes).

Threads: the walk and ``file_changed`` run on their caller's thread, watcher events on watchdog's.
Each delivery holds the Workspace's lock, so a watcher event never lands between a batch's reading
and its delivery; subscribers guard their own data and must not block on the Workspace.
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

from inkling.analysis.workspace_files import MAX_FILE_BYTES, read_bytes
from inkling.analysis.workspace_filter import WorkspaceFilter
from inkling.analysis.workspace_watcher import WorkspaceWatcher

# watchdog's inotify backend warns, harmlessly and on its own thread, when a new folder's watch is
# registered twice.
warnings.filterwarnings("ignore", message=r"Callback with id .* already exists for watch",
                        category=RuntimeWarning)

log = logging.getLogger("inkling.workspace")
Progress = Callable[[str, float], None]
BATCH = 256                      # files read and handed to subscribers at once


@dataclass(frozen=True)
class WorkspaceLimits:
    max_files: int = 20_000                # files read by one walk
    max_file_bytes: int = MAX_FILE_BYTES   # larger files are skipped
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
    """(text, "") or (None, why the file was skipped): no symlink, no binary file."""
    data, why = read_bytes(path, max_bytes, follow_symlinks=False)
    if data is None:
        return None, why
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


def candidates(root: Path, rules: WorkspaceFilter, report: WalkReport):
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
                    if not rules.ignored_dir(path):
                        dirs.append(path)
                elif entry.is_file():
                    if rules.gitignored(path, False):
                        report.skip("ignored files")
                    else:
                        yield path
            except OSError:
                report.skip("unreadable files")
        stack.extend(reversed(dirs))


def read_batch(paths: list[Path], limits: WorkspaceLimits, report: WalkReport
               ) -> list[WorkspaceFile]:
    """The files of ``paths`` readable within the limits; ``report`` counts what was skipped."""
    batch = []
    for path in paths:
        text, why = read_text(path, limits.max_file_bytes)
        if text is None:
            report.skip(why)
        elif report.bytes + len(text) > limits.max_total_bytes:
            report.skip("files over the byte budget")
        else:
            report.bytes += len(text)
            batch.append(WorkspaceFile(path, text))
    report.files += len(batch)
    return batch


class Subscribers:
    """The subscribers, those a walk has fed, and the files handed out; used under the
    Workspace's lock."""

    def __init__(self):
        self._all: list[WorkspaceSubscriber] = []
        self._fed: list[WorkspaceSubscriber] = []    # those a walk has handed the files to
        self._known: dict[Path, int] = {}            # files handed out: path -> text hash

    def add(self, subscriber: WorkspaceSubscriber) -> bool:
        """False when it was subscribed already."""
        if subscriber in self._all:
            return False
        self._all.append(subscriber)
        return True

    def remove(self, subscriber: WorkspaceSubscriber) -> None:
        if subscriber in self._all:
            self._all.remove(subscriber)
        if subscriber in self._fed:
            self._fed.remove(subscriber)

    def all(self) -> list[WorkspaceSubscriber]:
        return list(self._all)

    def fed(self) -> list[WorkspaceSubscriber]:
        return list(self._fed)

    def feed_new(self) -> list[WorkspaceSubscriber]:
        """Those no walk has fed yet, counted fed from now on."""
        new = [s for s in self._all if s not in self._fed]
        self._fed.extend(new)
        return new

    @property
    def waiting(self) -> bool:
        """Whether a subscriber has not had a walk yet."""
        return any(s not in self._fed for s in self._all)

    def handed_out(self) -> list[Path]:
        return list(self._known)

    def deliver(self, files: list[WorkspaceFile], subscribers: list) -> None:
        """A walk's batch, each subscriber given the files it wants."""
        for s in subscribers:
            wanted = [f for f in files if s.wants(f.path)]
            if wanted:
                _quietly(s.put_files, wanted)
        self._known.update((f.path, hash(f.text)) for f in files)

    def change(self, file: WorkspaceFile, takers: list) -> None:
        """One file's new text, to ``takers`` unless they have it already."""
        if self._known.get(file.path) == hash(file.text):
            return                               # told already
        for s in takers:
            _quietly(s.file_changed, file)
        self._known[file.path] = hash(file.text)

    def remove_files(self, paths: list[Path]) -> None:
        if paths:
            for s in self._all:
                _quietly(s.remove_files, list(paths))
            for p in paths:
                self._known.pop(p, None)


class Workspace:
    """The folders and their filter, one walk, the changes since, one watcher."""

    def __init__(self, folders: Iterable = (), limits: WorkspaceLimits = WorkspaceLimits()):
        self.limits = limits
        self._lock = threading.RLock()           # one delivery at a time (see the module doc)
        self._roots: list[Path] = []
        self._filter = WorkspaceFilter([])
        self._subscribers = Subscribers()
        self._watcher = WorkspaceWatcher(self)
        self.report = WalkReport()               # the last walk's
        self.walks = 0
        self._set_roots(folders)

    # ----------------------------------------------------------------- setup
    @property
    def folders(self) -> list[Path]:
        return list(self._roots)

    def subscribe(self, subscriber: WorkspaceSubscriber) -> None:
        """Add a subscriber; it is told the folders now and gets the files from the next walk."""
        with self._lock:
            if self._subscribers.add(subscriber):
                subscriber.set_roots(self.folders)

    def unsubscribe(self, subscriber: WorkspaceSubscriber) -> None:
        with self._lock:
            self._subscribers.remove(subscriber)

    @property
    def subscribers(self) -> list[WorkspaceSubscriber]:
        return self._subscribers.all()

    def set_folders(self, folders: Iterable, progress: Progress | None = None) -> WalkReport:
        """Drop the files of folders removed and walk the folders added."""
        with self._lock:
            old = set(self._roots)
            self._set_roots(folders)
            gone = [p for p in self._subscribers.handed_out() if self._filter.root_of(p) is None]
            self._subscribers.remove_files(gone)
            for s in self._subscribers.all():
                s.set_roots(self.folders)
            added = [r for r in self._roots if r not in old]
        self._watcher.restart(self.folders)
        return self._walk(added, self._subscribers.fed(), progress)

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
        """Read every wanted file once, within the limits, for the subscribers not yet fed;
        progress gets (message, fraction)."""
        with self._lock:
            new = self._subscribers.feed_new()
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
        return self._subscribers.waiting

    def _walk(self, roots: list[Path], subscribers: list, progress: Progress | None
              ) -> WalkReport:
        t0, report = time.perf_counter(), WalkReport()
        if subscribers and roots:
            with self._lock:
                paths = list(dict.fromkeys(      # in order; nested roots give a path once
                    p for root in roots for p in candidates(root, self._filter, report)
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

    def _read_all(self, paths: list[Path], subscribers: list, report: WalkReport,
                  progress: Progress | None) -> None:
        """Read and hand out ``paths`` in batches, each under the lock."""
        if len(paths) > self.limits.max_files:
            report.skip("files over the file budget", len(paths) - self.limits.max_files)
            paths = paths[:self.limits.max_files]
        for i in range(0, len(paths), BATCH):
            if progress:
                progress(f"reading {i}/{len(paths)} files", i / max(1, len(paths)))
            with self._lock:
                batch = read_batch(paths[i:i + BATCH], self.limits, report)
                self._subscribers.deliver(batch, subscribers)

    # ---------------------------------------------------------------- changes
    def file_changed(self, path) -> bool:
        """Reread ``path`` and tell the subscribers if its text is new to them; False when it
        is not the workspace's or is unreadable (then removed)."""
        with self._lock:
            path = self._locate(path)
            if path is None:
                return False
            if path.name == ".gitignore":
                self._filter.forget(path.parent)
            if not self._filter.wanted_path(path):
                return False
            takers = [s for s in self._subscribers.all() if s.wants(path)]
            if not takers:
                return False
            text, _ = read_text(path, self.limits.max_file_bytes)
            if text is None:
                self._subscribers.remove_files([path])
                return False
            self._subscribers.change(WorkspaceFile(path, text), takers)
            return True

    def file_removed(self, path) -> None:
        """``path`` (a file or a folder) is gone: its files leave every subscriber."""
        with self._lock:
            path = self._locate(path)
            if path is None:
                return
            self._subscribers.remove_files(
                [p for p in self._subscribers.handed_out() if p == path or path in p.parents]
                or [path])

    def folder_added(self, folder) -> WalkReport:
        """Walk a folder that appeared inside a root."""
        with self._lock:
            folder = self._locate(folder)
            if folder is None or not self._filter.wanted_folder(folder):
                return WalkReport()
            return self._walk([folder], self._subscribers.fed(), None)

    def _locate(self, path) -> Path | None:
        """``path`` made absolute with its folder resolved as the roots are; None off the roots."""
        p = Path(os.path.abspath(path))
        if self._filter.root_of(p) is not None:
            return p
        p = p.parent.resolve() / p.name
        return p if self._filter.root_of(p) is not None else None

    # ---------------------------------------------------------------- watcher
    def start(self) -> bool:
        """Watch the folders; False when watchdog cannot (then only ``file_changed`` updates)."""
        return self._watcher.start(self.folders)

    def stop(self) -> None:
        """Stop the watcher (not under the lock: its thread may be waiting for it)."""
        self._watcher.stop()


def _quietly(call, *args) -> None:
    """A subscriber's failure is logged; the others (and the watcher thread) go on."""
    try:
        call(*args)
    except Exception:                # noqa: BLE001
        log.exception("workspace subscriber %s failed", getattr(call, "__qualname__", call))
