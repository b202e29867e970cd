"""Helpers for the analysis tests: small workspaces on disk and a cursor marker."""
from __future__ import annotations

from pathlib import Path

from inkling.analysis import AnalysisOptions, CodeAnalysis

CURSOR = "|"


def write_tree(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def analysis_for(root: Path, files: dict[str, str] | None = None, **options) -> CodeAnalysis:
    """A CodeAnalysis over ``root`` indexed synchronously (no watcher unless asked)."""
    if files:
        write_tree(root, files)
    options.setdefault("background", False)
    options.setdefault("watch", False)
    a = CodeAnalysis(AnalysisOptions(**options))
    a.set_workspace_folders([root])
    return a


def open_at(a: CodeAnalysis, path: Path, text_with_cursor: str, vocab=None):
    """Open ``path`` with the text (``|`` marks the cursor); the monitor state there."""
    offset = text_with_cursor.index(CURSOR)
    text = text_with_cursor.replace(CURSOR, "", 1)
    uri = path.as_uri()
    if a.text(uri) is None:
        a.open(uri, text, "python")
    else:
        a.change(uri, text)
    return a.monitor(uri, offset, vocab)


def allowed_at(a: CodeAnalysis, path: Path, text_with_cursor: str):
    state = open_at(a, path, text_with_cursor)
    assert state is not None
    return state.allowed
