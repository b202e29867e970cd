"""Traces from a git history, one per commit: each changed file opens at the parent, its hunks
are applied (added lines typed, a completion asked at each), then it is checked and closed."""
from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import PurePosixPath

from inkling.completion.errors import InklingError
from inkling.lsp.languages import language_for

from inkling.evaluation.git_repo import FileChange, GitRepo
from inkling.evaluation.trace_builder import TraceBuilder, line_offsets, split_lines
from inkling.evaluation.trace_file import Header


class GitTraceError(InklingError):
    """A commit whose diff does not reproduce its files (the message names both)."""


@dataclass(frozen=True)
class GitTraceOptions:
    since: str
    extensions: tuple[str, ...] = (".py",)
    seed: int = 0
    max_commits: int = 0          # 0: every commit after ``since``
    context_files: int = 8        # unchanged files of the workspace written as `file` events
    max_file_bytes: int = 250_000
    accept: bool = True           # an accept event after each completion, as in retype traces


@dataclass(frozen=True)
class CommitTrace:
    commit: str
    builder: TraceBuilder


def _text(data: bytes, limit: int) -> str | None:
    """UTF-8 text of a blob, or None for binary, non-UTF-8 or oversized blobs."""
    if len(data) > limit or b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


class GitTracer:
    def __init__(self, repo: GitRepo, options: GitTraceOptions):
        self.repo, self.options = repo, options

    def _wanted(self, path: str) -> bool:
        return PurePosixPath(path).suffix.lower() in self.options.extensions

    def traces(self) -> list[CommitTrace]:
        commits = self.repo.commits_since(self.options.since)
        if self.options.max_commits:
            commits = commits[:self.options.max_commits]
        out = []
        for index, commit in enumerate(commits, start=1):
            builder = self.commit_trace(commit, index)
            if builder is not None:
                out.append(CommitTrace(commit, builder))
        return out

    def commit_trace(self, commit: str, index: int) -> TraceBuilder | None:
        """The trace of one commit, or None when it changes no wanted text file."""
        parent = self.repo.parent(commit)
        changes = self.repo.changed_files(parent, commit)
        edits = self._edits(parent, commit, changes)
        if not edits:
            return None
        rng = random.Random(f"{self.options.seed}:{commit}")
        language = language_for(edits[0][0].path, "text")
        name = f"git-{self.repo.name}-{index:04d}-{commit[:10]}"
        b = TraceBuilder(Header(name, language, description=(
            f"commit {commit[:10]} ({self.repo.subject(commit)}) replayed hunk by hunk")))
        changed = {c.path for c in changes}
        for path, text in self._context(parent, changed, [c.path for c, _, _ in edits]):
            b.file(path, text)
        for change, old, new in edits:
            self._replay_file(b, parent, commit, change.path, old, new, rng)
        return b

    def _edits(self, parent: str, commit: str, changes: list[FileChange]
               ) -> list[tuple[FileChange, str, str]]:
        """(change, old text, new text) of each added or modified wanted text file."""
        out = []
        for change in changes:
            if change.status[0] not in "AM" or not self._wanted(change.path):
                continue
            limit = self.options.max_file_bytes
            old = "" if change.status[0] == "A" else _text(self.repo.blob(parent, change.path),
                                                           limit)
            new = _text(self.repo.blob(commit, change.path), limit)
            if old is not None and new is not None:
                out.append((change, old, new))
        return out

    def _context(self, parent: str, changed: set[str], edited: list[str]):
        """Unchanged wanted files of the parent, those beside the edited files first."""
        if not self.options.context_files:
            return []
        dirs = {PurePosixPath(p).parent for p in edited}
        candidates = [p for p in self.repo.files(parent) if self._wanted(p) and p not in changed]
        candidates.sort(key=lambda p: (PurePosixPath(p).parent not in dirs, p))
        out = []
        for path in candidates:
            text = _text(self.repo.blob(parent, path), self.options.max_file_bytes)
            if text is not None:
                out.append((path, text))
            if len(out) == self.options.context_files:
                break
        return out

    def _replay_file(self, b: TraceBuilder, parent: str, commit: str, path: str, old: str,
                     new: str, rng: random.Random) -> None:
        old_lines, new_lines = split_lines(old), split_lines(new)
        b.open(path, old)
        delta = 0
        for h in self.repo.hunks(parent, commit, path):
            line = h.old_index + delta
            offsets = line_offsets(b.text(path))
            start, end = offsets[line], offsets[line + h.old_count]
            if b.text(path)[start:end] != "".join(old_lines[h.old_index:h.old_index + h.old_count]):
                raise GitTraceError(f"commit {commit[:10]} {path}: hunk -{h.old_start},"
                                    f"{h.old_count} does not match the file at the parent")
            b.delete(path, start, end)
            added = "".join(new_lines[h.new_index:h.new_index + h.new_count])
            if added:
                b.type_segment(path, start, added, rng, accept=self.options.accept)
            delta += h.new_count - h.old_count
        if b.text(path) != new:
            raise GitTraceError(f"commit {commit[:10]} {path}: applying the diff's hunks does "
                                "not give the file at the commit")
        b.check(path)
        b.close(path)
