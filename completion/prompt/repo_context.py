"""The repository-context block at one cursor: imported workspace definitions (nearest used first)
and chunks of recent files like the lines above the cursor, kept while the cursor stays near and no
import is added, so that the cache keeps what follows it (docs/decisions/repo-context.md)."""
from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Callable
from urllib.parse import unquote, urlparse

from inkling.analysis import CodeAnalysis
from inkling.analysis.imported_definitions import UNUSED, ImportedDefinitions
from inkling.analysis.workspace_files import read_text
from inkling.runtime.model_runtime import ModelRuntime

from inkling.completion.document import Document
from inkling.completion.options import CompletionOptions
from inkling.completion.prompt.builder import prompt_room
from inkling.completion.prompt.context_block import EMPTY, ContextBlock, Snippet, assemble
from inkling.completion.prompt.recent_files import RecentFiles
from inkling.completion.prompt.repo_format import repo_format

log = logging.getLogger("inkling.context")
LINE_GRID = 8            # the cursor's line, for distances, moves in steps of this many lines
KEEP_LINES = 32          # the block is chosen again this many lines away (or imports change)
QUERY_LINES = 24         # lines above the cursor's band of LINE_GRID lines that chunks match
MAX_CHUNKS = 4           # chunks of recent files offered to the block at most
UNUSED_RANK = 1.5        # imports the file does not use yet; used ones rank distance / 1000
SIMILAR_RANK = 2.0       # chunks of recent files rank this + 1 - similarity, after imports


def uri_path(uri: str) -> Path | None:
    if not uri.startswith("file:"):
        return None
    return Path(unquote(urlparse(uri).path))


def relative(path: Path, roots: list[Path]) -> str:
    """``path`` relative to the deepest workspace root holding it (POSIX), else its name."""
    for root in sorted(roots, key=lambda r: len(r.parts), reverse=True):
        try:
            return path.relative_to(root).as_posix()
        except ValueError:
            continue
    return path.name


@dataclass(frozen=True)
class _Choice:
    key: tuple               # what the block was chosen from, besides the cursor's place
    band: int                # the cursor's band then
    block: ContextBlock


class RepoContext:
    """One Engine's context blocks; ``open_text(path)``: an open document's text there, or None."""

    def __init__(self, open_text: Callable[[Path], str | None] = lambda p: None):
        self.recent = RecentFiles()
        self.roots: list[Path] = []                 # the workspace folders, resolved
        self._open_text = open_text
        self._imports = None                        # ImportedDefinitions, once asked for
        self._last: dict[str, _Choice] = {}         # uri -> the block chosen last
        self._warned = False

    def set_folders(self, folder_uris: list[str]) -> None:
        self.roots = [p.resolve() for p in map(uri_path, folder_uris) if p is not None]

    def touch(self, uri: str, text: Callable[[], str]) -> None:
        """Document ``uri`` was opened or edited: a recent file (``text`` read lazily)."""
        path = uri_path(uri)
        self.recent.touch(uri, relative(path, self.roots) if path else uri, text)

    def touch_file(self, path: Path) -> None:
        """A file changed on disk: a recent file, its text as read now."""
        text, _ = read_text(path)
        if text is None:
            return
        path = path.resolve()
        self.recent.touch(path.as_uri(), relative(path, self.roots), lambda: text)

    def forget(self, uri: str) -> None:
        self.recent.forget(uri)
        self._last.pop(uri, None)

    def at_cursor(self, c: CompletionOptions, doc: Document, offset: int,
                  runtime: ModelRuntime, analysis: Callable[[], CodeAnalysis]) -> ContextBlock:
        """The block ``completion.context`` asks for at ``offset`` of ``doc``; EMPTY when off."""
        if c.context == "off":
            return EMPTY
        budget = int(prompt_room(runtime, c.max_block_tokens) * c.context_share)
        return self.block(c.context, doc.uri, doc.text, offset, runtime, budget,
                          analysis() if c.context in ("imports", "both") else None)

    def block(self, mode: str, uri: str, text: str, offset: int, runtime: ModelRuntime,
              budget: int, analysis=None) -> ContextBlock:
        """The block at ``offset`` of ``uri`` within ``budget`` tokens (EMPTY: none or no format);
        the last is kept while it ``_keeps`` and the cursor is within KEEP_LINES of it."""
        fmt = repo_format(runtime)
        if fmt is None:
            if not self._warned:
                self._warned = True
                log.warning("model family %s has no repository format: no context block",
                            runtime.fim.family if runtime.fim else "(no fill-in-the-middle)")
            return EMPTY
        path, roots = uri_path(uri), self.roots
        imported = self._imported(analysis, uri, text, offset) \
            if mode in ("imports", "both") and analysis is not None else []
        target = relative(path, roots) if path is not None else uri.rsplit("/", 1)[-1]
        repo = roots[0].name if roots else ""
        key = (mode, tuple((s.path, s.text, s.order) for s in imported), budget, target, repo,
               id(runtime))
        band, last = _band(text, offset), self._last.get(uri)
        if last is not None and _keeps(last.key, key) and abs(band - last.band) < KEEP_LINES:
            return last.block
        similar = self._similar(uri, text, offset) if mode in ("similar", "both") else []
        block = assemble(imported + similar, fmt, target, repo, runtime, budget)
        self._last[uri] = _Choice(key, band, block)
        return block

    def _imported(self, analysis, uri: str, text: str, offset: int) -> list[Snippet]:
        """Snippets of the workspace definitions the document imports, the nearest used first."""
        roots = self.roots
        if self._imports is None or self._imports.index is not analysis.index:
            self._imports = ImportedDefinitions(analysis.index, self._open_text)
        symbols = analysis.symbols(uri)
        if symbols is None or not symbols.parsed:
            return []
        line = _band(text, offset) + LINE_GRID // 2
        try:
            found = self._imports.find(symbols, text, line)
        except Exception:            # noqa: BLE001 - analysis never breaks a completion
            log.exception("imported definitions of %s", uri)
            return []
        here = uri_path(uri)
        here = here.resolve() if here is not None else None
        first: dict[Path, int] = {}
        for d in found:
            first[d.path] = min(first.get(d.path, d.order), d.order)
        return [Snippet(relative(d.path, roots), d.text, "imports",
                        UNUSED_RANK if d.distance >= UNUSED else min(d.distance, 999) / 1000,
                        (first[d.path], relative(d.path, roots), d.line))
                for d in found if d.path != here]

    def _similar(self, uri: str, text: str, offset: int) -> list[Snippet]:
        """Snippets of the recent files' chunks most like the lines above the cursor's band."""
        band = _band(text, offset)
        lines = text.split("\n")
        query = "\n".join(lines[max(0, band - QUERY_LINES):band] if band else
                          lines[:text.count("\n", 0, offset) + 1])
        last = self._last.get(uri)
        sticky = frozenset() if last is None else frozenset(
            (s.path, s.order[1]) for s in last.block.snippets if s.kind == "similar")
        chunks = self.recent.similar(query, uri, MAX_CHUNKS, sticky=sticky)
        return [Snippet(c.path, c.text, "similar", SIMILAR_RANK + 1 - c.score, (c.path, c.start))
                for c in chunks]


def _keeps(last: tuple, key: tuple) -> bool:
    """Whether a block chosen for ``last`` serves ``key``: same settings, no new definition (lost
    ones stay: retyping an import line would otherwise cost the cache the block)."""
    return last[0] == key[0] and last[2:] == key[2:] and set(key[1]) <= set(last[1])


def _band(text: str, offset: int) -> int:
    """The first line of the cursor's band of LINE_GRID lines."""
    return text.count("\n", 0, offset) // LINE_GRID * LINE_GRID
