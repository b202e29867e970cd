"""One folder's .gitignore rules (matched by ``pathspec``, git's own semantics), and
the verdict of several nested ones: the deepest .gitignore with a matching rule decides."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pathspec

from inkling.analysis.workspace_files import read_text


@dataclass(frozen=True)
class GitIgnore:
    spec: pathspec.GitIgnoreSpec | None

    @staticmethod
    def parse(text: str) -> "GitIgnore":
        lines = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("#")]
        return GitIgnore(pathspec.GitIgnoreSpec.from_lines(lines) if lines else None)

    @staticmethod
    def load(folder: Path) -> "GitIgnore":
        text, _ = read_text(folder / ".gitignore", errors="replace")
        return GitIgnore(None) if text is None else GitIgnore.parse(text)

    def decision(self, rel: str, is_dir: bool) -> bool | None:
        """True: ignored, False: re-included by ``!``, None: no rule matched. ``rel`` is
        relative to the .gitignore's folder, with ``/`` separators."""
        if self.spec is None:
            return None
        return self.spec.check_file(rel + ("/" if is_dir else "")).include


def ignored(rules: list[tuple[Path, GitIgnore]], path: Path, is_dir: bool) -> bool:
    """``rules``: (folder, its .gitignore) from the root down; the deepest folder with a
    matching rule decides."""
    verdict = False
    for folder, rule in rules:
        try:
            rel = path.relative_to(folder).as_posix()
        except ValueError:
            continue
        found = rule.decision(rel, is_dir)
        if found is not None:
            verdict = found
    return verdict
