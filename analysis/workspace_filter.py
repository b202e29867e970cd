"""Which workspace paths are read: under a folder, not in a tool folder or a hidden one,
not ignored by a ``.gitignore`` (the deepest one with a matching rule decides, as in git).
What a file holds (size, binary, encoding) is the reader's to judge (``workspace.py``)."""
from __future__ import annotations

from pathlib import Path

from inkling.analysis.gitignore import GitIgnore, ignored

SKIPPED_DIRS = frozenset({".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv",
                          ".tox", ".nox", ".mypy_cache", ".pytest_cache", ".ruff_cache",
                          "site-packages", ".eggs", "dist", "build", ".idea", ".vscode"})
SOURCE_SUFFIXES = (".py", ".pyi")


def skipped_dir_name(name: str) -> bool:
    return name in SKIPPED_DIRS or name.startswith(".")


class WorkspaceFilter:
    """Path rules over several roots; the ``.gitignore`` files are read when first needed
    and kept (``forget`` drops one that changed). Not thread-safe: the Workspace calls it
    under its lock."""

    def __init__(self, roots: list[Path]):
        self.roots = list(roots)
        self._ignores: dict[Path, GitIgnore] = {}

    def root_of(self, path: Path) -> Path | None:
        """The deepest root ``path`` is in (or is)."""
        best = None
        for root in self.roots:
            if (path == root or root in path.parents) and \
                    (best is None or len(root.parts) > len(best.parts)):
                best = root
        return best

    def ignored_dir(self, path: Path) -> bool:
        """A folder met while walking (its parents already passed)."""
        return skipped_dir_name(path.name) or self.gitignored(path, True)

    def wanted_path(self, path: Path) -> bool:
        """A file anywhere: under a root, in no skipped folder, not ignored."""
        root = self.root_of(path)
        if root is None or path == root:
            return False
        if any(skipped_dir_name(p) for p in path.relative_to(root).parts[:-1]):
            return False
        return not self.gitignored(path, False)

    def wanted_folder(self, path: Path) -> bool:
        """A folder inside a root (not the root), walked when it appears there."""
        root = self.root_of(path)
        if root is None or path == root:
            return False
        if any(skipped_dir_name(p) for p in path.relative_to(root).parts):
            return False
        return not self.gitignored(path, True)

    def gitignored(self, path: Path, is_dir: bool) -> bool:
        root = self.root_of(path)
        if root is None:
            return False
        folders = [root]
        for part in path.relative_to(root).parts[:-1]:
            folders.append(folders[-1] / part)
        return ignored([(f, self._ignore(f)) for f in folders], path, is_dir)

    def forget(self, folder: Path) -> None:
        """``folder``'s .gitignore changed: read it again when next needed."""
        self._ignores.pop(folder, None)

    def _ignore(self, folder: Path) -> GitIgnore:
        if folder not in self._ignores:
            self._ignores[folder] = GitIgnore.load(folder)
        return self._ignores[folder]
