"""The few git queries the trace tools need, through the ``git`` command."""
from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from inkling.completion.errors import InklingError

_HUNK = re.compile(rb"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@", re.MULTILINE)


class GitError(InklingError):
    """A git command that failed: the message names the repository and the command."""


@dataclass(frozen=True)
class Hunk:
    """One hunk of a zero-context unified diff (line numbers from 1, as git writes them)."""
    old_start: int
    old_count: int
    new_start: int
    new_count: int

    @property
    def old_index(self) -> int:
        """Zero-based index of the first old line, or of the line the insertion precedes."""
        return self.old_start - 1 if self.old_count else self.old_start

    @property
    def new_index(self) -> int:
        return self.new_start - 1 if self.new_count else self.new_start


@dataclass(frozen=True)
class FileChange:
    status: str    # A added, M modified, D deleted, T type changed...
    path: str


def parse_hunks(diff: bytes) -> list[Hunk]:
    def count(raw: bytes | None) -> int:
        return 1 if raw is None else int(raw)
    return [Hunk(int(m[1]), count(m[2]), int(m[3]), count(m[4])) for m in _HUNK.finditer(diff)]


class GitRepo:
    def __init__(self, path: str | Path):
        self.path = Path(path)
        if not self.path.is_dir():
            raise GitError(f"{path}: no such directory")
        self._run("rev-parse", "--git-dir")

    def _run(self, *args: str) -> bytes:
        env = dict(os.environ, GIT_LITERAL_PATHSPECS="1", LC_ALL="C")
        try:
            done = subprocess.run(["git", "-C", str(self.path), "-c", "core.quotepath=false",
                                   *args], capture_output=True, env=env, check=False)
        except FileNotFoundError:
            raise GitError("git is not installed (no 'git' command on PATH)") from None
        if done.returncode != 0:
            reason = done.stderr.decode("utf-8", "replace").strip().splitlines()
            raise GitError(f"{self.path}: git {' '.join(args[:3])} failed: "
                           f"{reason[-1] if reason else 'exit status ' + str(done.returncode)}")
        return done.stdout

    @property
    def name(self) -> str:
        top = self._run("rev-parse", "--show-toplevel").decode().strip()
        return Path(top).name

    def resolve(self, rev: str) -> str:
        try:
            return self._run("rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}").decode().strip()
        except GitError:
            raise GitError(f"{self.path}: unknown revision {rev!r}") from None

    def commits_since(self, rev: str) -> list[str]:
        """Commits after ``rev`` up to HEAD, oldest first, following first parents."""
        base = self.resolve(rev)
        out = self._run("rev-list", "--reverse", "--first-parent", f"{base}..HEAD")
        return out.decode().split()

    def parent(self, commit: str) -> str:
        """The first parent, or the empty tree for a root commit."""
        line = self._run("rev-list", "--parents", "-n", "1", commit).decode().split()
        if len(line) > 1:
            return line[1]
        return self._run("hash-object", "-t", "tree", os.devnull).decode().strip()

    def subject(self, commit: str) -> str:
        return self._run("log", "-1", "--format=%s", commit).decode("utf-8", "replace").strip()

    def changed_files(self, old: str, new: str) -> list[FileChange]:
        out = self._run("diff", "--name-status", "--no-renames", "-z", old, new).split(b"\0")
        fields = [f.decode("utf-8", "surrogateescape") for f in out if f]
        return [FileChange(fields[i], fields[i + 1]) for i in range(0, len(fields) - 1, 2)]

    def hunks(self, old: str, new: str, path: str) -> list[Hunk]:
        out = self._run("diff", "--no-color", "--no-ext-diff", "--no-textconv", "--no-renames",
                        "--diff-algorithm=myers", "-U0", old, new, "--", path)
        return parse_hunks(out)

    def files(self, commit: str) -> list[str]:
        out = self._run("ls-tree", "-r", "-z", "--name-only", commit).split(b"\0")
        return [f.decode("utf-8", "surrogateescape") for f in out if f]

    def blob(self, commit: str, path: str) -> bytes:
        return self._run("cat-file", "blob", f"{commit}:{path}")
