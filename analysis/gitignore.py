"""A simple .gitignore matcher: globs, ``dir/`` patterns, ``/anchored`` patterns, ``!``."""
from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class IgnoreRule:
    pattern: str
    negated: bool
    dir_only: bool
    anchored: bool        # matched against the path relative to the .gitignore's folder

    def matches(self, rel: str, is_dir: bool) -> bool:
        if self.dir_only and not is_dir:
            return False
        if self.anchored:
            return fnmatch.fnmatchcase(rel, self.pattern)
        return fnmatch.fnmatchcase(rel.rsplit("/", 1)[-1], self.pattern)


@dataclass(frozen=True)
class GitIgnore:
    rules: tuple[IgnoreRule, ...]

    @staticmethod
    def parse(text: str) -> "GitIgnore":
        rules = []
        for raw in text.splitlines():
            line = raw.rstrip()
            if not line or line.startswith("#"):
                continue
            negated = line.startswith("!")
            line = line[1:] if negated else line
            dir_only = line.endswith("/")
            line = line.rstrip("/")
            anchored = "/" in line
            line = line.lstrip("/").replace("**/", "")
            if line:
                rules.append(IgnoreRule(line, negated, dir_only, anchored))
        return GitIgnore(tuple(rules))

    @staticmethod
    def load(folder: Path) -> "GitIgnore":
        try:
            return GitIgnore.parse((folder / ".gitignore").read_text("utf-8", "replace"))
        except OSError:
            return GitIgnore(())

    def decision(self, rel: str, is_dir: bool) -> bool | None:
        """True: ignored, False: re-included by ``!``, None: no rule matched."""
        result = None
        for rule in self.rules:
            if rule.matches(rel, is_dir):
                result = not rule.negated
        return result
