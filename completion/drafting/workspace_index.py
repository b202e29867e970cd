"""The workspace source for retrieval drafting: every text file under the workspace
folders, tokenized into a suffix index, kept current by watchdog.

Indexing honours `.gitignore` files (with `pathspec`), skips hidden folders, binary,
unreadable and huge files, stays within a file and byte budget, and says what it
skipped. Files that vanish mid-way are skipped, symlinks are not followed (no loops).
"""
from __future__ import annotations

import logging
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from inkling.analysis.gitignore import GitIgnore, ignored

from .suffix_index import SuffixIndex

log = logging.getLogger("inkling.workspace")
Progress = Callable[[str, float], None]
SKIP_DIRS = {".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv", ".tox",
             ".mypy_cache", ".pytest_cache", "dist", "build", ".idea", ".vscode"}


@dataclass(frozen=True)
class WorkspaceLimits:
    max_files: int = 20_000
    max_file_bytes: int = 1 << 20
    max_total_bytes: int = 256 << 20


@dataclass
class IndexReport:
    files: int = 0
    tokens: int = 0
    bytes: int = 0
    seconds: float = 0.0
    skipped: dict[str, int] = field(default_factory=dict)    # reason -> count

    def skip(self, reason: str) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + 1

    def summary(self) -> str:
        skipped = ", ".join(f"{n} {why}" for why, n in sorted(self.skipped.items())) or "none"
        return (f"indexed {self.files} files ({self.tokens} tokens) in {self.seconds:.2f} s; "
                f"skipped: {skipped}")


class _Ignore:
    """The .gitignore rules that apply under one root (folders added from the top down)."""

    def __init__(self, root: Path):
        self.root = root
        self.specs: list[tuple[Path, GitIgnore]] = []

    def add_dir(self, folder: Path) -> None:
        rules = GitIgnore.load(folder)
        if rules.spec is not None:
            self.specs.append((folder, rules))

    def ignored(self, path: Path, is_dir: bool) -> bool:
        return ignored(self.specs, path, is_dir)


def read_text_file(path: Path, max_bytes: int) -> tuple[str | None, str]:
    """(text, "") or (None, reason it was skipped)."""
    try:
        if path.is_symlink():
            return None, "symlinks"
        size = path.stat().st_size
        if size > max_bytes:
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


class WorkspaceIndex:
    def __init__(self, encode_batch: Callable[[list[str]], list[list[int]]],
                 limits: WorkspaceLimits = WorkspaceLimits()):
        self.encode_batch = encode_batch
        self.limits = limits
        self.index = SuffixIndex()
        self.lock = threading.Lock()
        self.roots: list[Path] = []
        self._ignores: dict[Path, _Ignore] = {}
        self._observer = None
        self.report = IndexReport()
        self.updates_ms: list[float] = []

    # ---------------------------------------------------------------- indexing
    def candidates(self, root: Path, report: IndexReport):
        ignore = self._ignores.setdefault(root, _Ignore(root))
        for folder, dirs, files in os.walk(root, followlinks=False, onerror=lambda e: report.skip(
                "unreadable folders")):
            here = Path(folder)
            ignore.add_dir(here)
            dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith(".")
                             and not ignore.ignored(here / d, True))
            for name in sorted(files):
                path = here / name
                if ignore.ignored(path, False):
                    report.skip("ignored files")
                    continue
                yield path

    def index_folders(self, roots: list[Path], progress: Progress | None = None) -> IndexReport:
        t0 = time.perf_counter()
        report = IndexReport()
        self.roots = [Path(r).resolve() for r in roots]
        paths = [p for r in self.roots if r.is_dir() for p in self.candidates(r, report)]
        if len(paths) > self.limits.max_files:
            report.skipped["files over the file budget"] = len(paths) - self.limits.max_files
            paths = paths[:self.limits.max_files]
        texts: list[tuple[str, str]] = []
        for i, path in enumerate(paths):
            if progress and i % 200 == 0:
                progress(f"reading {i}/{len(paths)} files", 0.5 * i / max(1, len(paths)))
            text, why = read_text_file(path, self.limits.max_file_bytes)
            if text is None:
                report.skip(why)
                continue
            if report.bytes + len(text) > self.limits.max_total_bytes:
                report.skip("files over the byte budget")
                continue
            report.bytes += len(text)
            texts.append((str(path), text))
        self._tokenize_into_index(texts, report, progress)
        report.seconds = time.perf_counter() - t0
        self.report = report
        log.info("workspace: %s", report.summary())
        if progress:
            progress(report.summary(), 1.0)
        return report

    def _tokenize_into_index(self, texts, report: IndexReport, progress) -> None:
        batch, items = 256, []
        for i in range(0, len(texts), batch):
            part = texts[i:i + batch]
            for (path, _), ids in zip(part, self.encode_batch([t for _, t in part])):
                items.append((path, ids))
                report.files += 1
                report.tokens += len(ids)
            if progress:
                progress(f"tokenizing {report.files}/{len(texts)} files",
                         0.5 + 0.5 * (i + batch) / max(1, len(texts)))
        with self.lock:
            self.index.put_many(items)

    # ---------------------------------------------------------------- updates
    def update_file(self, path: str | Path) -> bool:
        """Re-read one file (changed or created on disk); False if it was skipped."""
        t0 = time.perf_counter()
        path = Path(path)
        if not self._inside(path):
            return False
        text, _ = read_text_file(path, self.limits.max_file_bytes)
        with self.lock:
            if text is None:
                self.index.remove(str(path))
            else:
                self.index.put(str(path), self.encode_batch([text])[0])
        self.updates_ms.append((time.perf_counter() - t0) * 1000)
        return text is not None

    def remove_file(self, path: str | Path) -> None:
        with self.lock:
            self.index.remove(str(Path(path)))

    def _inside(self, path: Path) -> bool:
        for root in self.roots:
            try:
                rel = path.relative_to(root)
            except ValueError:
                continue
            parts = rel.parts
            if any(p in SKIP_DIRS or p.startswith(".") for p in parts[:-1]):
                return False
            ignore = self._ignores.get(root)
            return not (ignore and ignore.ignored(path, False))
        return False

    def matches(self, context: list[int]):
        with self.lock:
            return self.index.matches(context)

    def found(self, context: list[int]):
        with self.lock:
            return self.index.found(context)

    # ---------------------------------------------------------------- watching
    def start_watching(self) -> None:
        from watchdog.events import FileSystemEventHandler
        from watchdog.observers import Observer
        owner = self

        class Handler(FileSystemEventHandler):
            def on_modified(self, event):
                if not event.is_directory:
                    owner.update_file(event.src_path)

            on_created = on_modified

            def on_deleted(self, event):
                if not event.is_directory:
                    owner.remove_file(event.src_path)

            def on_moved(self, event):
                if not event.is_directory:
                    owner.remove_file(event.src_path)
                    owner.update_file(event.dest_path)

        self._observer = Observer()
        for root in self.roots:
            if root.is_dir():
                self._observer.schedule(Handler(), str(root), recursive=True)
        self._observer.daemon = True
        self._observer.start()

    def stop(self) -> None:
        if self._observer is not None:
            self._observer.stop()
            self._observer = None
