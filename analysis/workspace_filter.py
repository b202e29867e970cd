"""Which workspace paths the index reads: .gitignore rules, tool folders, size, binary."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from .gitignore import GitIgnore, ignored

SKIPPED_DIRS = frozenset({".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv",
                          ".tox", ".nox", ".mypy_cache", ".pytest_cache", ".ruff_cache",
                          "site-packages", ".eggs"})
SOURCE_SUFFIXES = (".py", ".pyi")


@dataclass
class WorkspaceFilter:
    root: Path
    max_file_bytes: int = 1_000_000
    _ignores: dict = field(default_factory=dict, repr=False)

    def ignored_dir(self, path: Path) -> bool:
        name = path.name
        if name in SKIPPED_DIRS or (name.startswith(".") and path != self.root):
            return True
        return self._gitignored(path, True)

    def wanted_file(self, path: Path) -> bool:
        """A Python source under the root, not ignored, not too large, not binary."""
        if path.suffix not in SOURCE_SUFFIXES or not self._under_root(path):
            return False
        if any(p in SKIPPED_DIRS or p.startswith(".") for p in path.relative_to(self.root)
               .parts[:-1]):
            return False
        if self._gitignored(path, False):
            return False
        try:
            if path.stat().st_size > self.max_file_bytes:
                return False
            with path.open("rb") as f:
                return b"\0" not in f.read(8192)
        except OSError:
            return False

    def _under_root(self, path: Path) -> bool:
        try:
            path.relative_to(self.root)
            return True
        except ValueError:
            return False

    def _gitignored(self, path: Path, is_dir: bool) -> bool:
        """The deepest .gitignore with a matching rule decides (as git does)."""
        if not self._under_root(path):
            return False
        folders = [self.root]
        for part in path.relative_to(self.root).parts[:-1]:
            folders.append(folders[-1] / part)
        return ignored([(f, self._ignore(f)) for f in folders], path, is_dir)

    def _ignore(self, folder: Path) -> GitIgnore:
        if folder not in self._ignores:
            self._ignores[folder] = GitIgnore.load(folder)
        return self._ignores[folder]
