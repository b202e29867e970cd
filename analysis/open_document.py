"""An open document as the analysis keeps it: tree, symbols, readable names and last scan,
each made lazily. Owned by the CodeAnalysis's caller's thread."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from inkling.analysis.cursor_scope import KeptHeaders
from inkling.analysis.document_tree import DocumentTree
from inkling.analysis.draft_names import readable_parts
from inkling.analysis.python_scanner import ScanState
from inkling.analysis.resolver import Resolver
from inkling.analysis.symbol_index import SymbolIndex
from inkling.analysis.symbols import FileSymbols


@dataclass
class OpenDocument:
    uri: str
    path: Path | None
    language: str
    tree: DocumentTree | None          # None: no grammar for the language
    symbols: FileSymbols | None = None
    symbols_version: int = -1
    free_names: tuple | None = None         # what a free read may name (``readable_parts``)
    free_version: int = -1                  # the tree version they are of
    free_workspace: frozenset | None = None  # the workspace's names they are of
    scanned: tuple[str, int, ScanState] | None = None   # (text, start, state) of the last scan
    kept_headers: KeptHeaders = field(default_factory=KeptHeaders)


def scan_state(doc: OpenDocument, segment: str, start: int) -> ScanState:
    """The scanner's state after ``segment`` (``start`` to the cursor), continued from the last
    scan where that scanned a prefix of it from ``start``."""
    last = doc.scanned
    if last is not None and last[1] == start and segment.startswith(last[0]):
        scan = last[2].advance(segment[len(last[0]):])
    else:
        scan = ScanState().advance(segment)
    doc.scanned = (segment, start, scan)
    return scan


def readable_names(doc: OpenDocument, symbols: FileSymbols, index: SymbolIndex
                   ) -> tuple | None:
    """The names a free read in ``doc`` may name, as (workspace's, document's), cached per tree
    version and workspace names; the workspace's part stays one object, so its masks are kept."""
    tree, workspace = doc.tree, index.workspace_names()
    if doc.free_version != tree.version or doc.free_workspace is not workspace:
        bound = index.parsers.extractor().bound_names(tree.root)
        parts = readable_parts(symbols, bound, index, Resolver(index))
        if parts is not None and doc.free_names is not None and (
                parts[0] is doc.free_names[0] or parts[0] == doc.free_names[0]):
            parts = (doc.free_names[0], parts[1])        # the same object: masks kept
        doc.free_names = parts
        doc.free_version, doc.free_workspace = tree.version, workspace
    return doc.free_names
