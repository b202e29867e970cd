"""The workspace's text files as a drafting source: a WorkspaceSubscriber that tokenizes each batch
a walk hands it, indexes them when the walk is done and a changed file at once. The Workspace
calls it from one thread at a time; ``lock`` guards the index against the drafter's searches."""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from inkling.analysis.workspace import WalkReport, Workspace, WorkspaceFile, WorkspaceLimits

from inkling.completion.progress import Progress
from inkling.completion.drafting.suffix_index import SuffixIndex

EncodeBatch = Callable[[list[str]], list[list[int]]]


@dataclass
class IndexReport(WalkReport):
    tokens: int = 0

    def summary(self) -> str:
        return WalkReport.summary(self).replace(" files in ", f" files ({self.tokens} tokens) in ",
                                                1)


class WorkspaceIndex:
    def __init__(self, encode_batch: EncodeBatch):
        self.encode_batch = encode_batch
        self.index = SuffixIndex()
        self.lock = threading.Lock()
        self.tokens = 0                          # tokens indexed by walks
        self.updates_ms: list[float] = []        # the cost of each file changed since
        self._pending: dict[str, list[int]] = {}  # a walk's files, indexed when it is done

    def wants(self, path: Path) -> bool:
        return True                              # every text file the Workspace reads

    def set_roots(self, roots: list[Path]) -> None:
        pass

    def put_files(self, files: list[WorkspaceFile]) -> None:
        for f, ids in zip(files, self.encode_batch([f.text for f in files])):
            self._pending[str(f.path)] = ids
            self.tokens += len(ids)

    def walk_done(self) -> None:
        items, self._pending = list(self._pending.items()), {}
        if not items:
            return                               # (a merge of everything for nothing)
        with self.lock:
            self.index.put_many(items)

    def file_changed(self, file: WorkspaceFile) -> None:
        t0 = time.perf_counter()
        key = str(file.path)
        self._pending.pop(key, None)             # a walk's older copy
        ids = self.encode_batch([file.text])[0]
        with self.lock:
            self.index.put(key, ids)
        self.updates_ms.append((time.perf_counter() - t0) * 1000)

    def remove_files(self, paths: list[Path]) -> None:
        with self.lock:
            for path in paths:
                self._pending.pop(str(path), None)
                self.index.remove(str(path))

    def matches(self, context: list[int]):
        with self.lock:
            return self.index.matches(context)

    def found(self, context: list[int]):
        with self.lock:
            return self.index.found(context)

    def index_folders(self, roots: list[Path], progress: Progress | None = None,
                      limits: WorkspaceLimits = WorkspaceLimits()) -> IndexReport:
        """Index ``roots`` once through a Workspace of its own, not watched (a datastore folder)."""
        workspace = Workspace(roots, limits)
        workspace.subscribe(self)
        tokens = self.tokens
        report = workspace.walk(progress)
        return IndexReport(**vars(report), tokens=self.tokens - tokens)
