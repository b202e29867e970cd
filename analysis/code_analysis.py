"""The analysis layer's facade for the Engine and the replay's metrics: documents (open, change,
close), and per completion a ``MonitorState`` (``monitor``) and a ``SyntaxGuard`` (``guard``).
No method raises into the Engine: failures are logged and mean "no constraint" (None).
"""
from __future__ import annotations

import logging
import threading

from inkling.analysis.analysis_options import AnalysisOptions
from inkling.analysis.cursor_scope import cursor_scope, enclosing_headers
from inkling.analysis.document_tree import DocumentTree
from inkling.analysis.draft_names import DraftNames
from inkling.analysis.grammars import Grammars
from inkling.analysis.monitor import MonitorContext, MonitorState
from inkling.analysis.open_document import OpenDocument, readable_names, scan_state
from inkling.analysis.open_string import SCANNED_LANGUAGES, string_quote
from inkling.analysis.own_workspace import OwnWorkspace
from inkling.analysis.resolver import Resolver
from inkling.analysis.statement_start import scan_start
from inkling.analysis.symbol_index import SymbolIndex
from inkling.analysis.symbols import FileSymbols
from inkling.analysis.syntax_guard import SyntaxGuard
from inkling.analysis.text_edit import TextEdit
from inkling.analysis.token_masks import MaskCache
from inkling.analysis.trigger_identifier import TriggerIdentifier, first_trigger_identifier
from inkling.analysis.vocabulary import TokenVocabulary
from inkling.analysis.workspace import local_path as _path

log = logging.getLogger(__name__)


class CodeAnalysis:
    """Documents, workspace index, monitors and syntax guard for one Engine."""

    def __init__(self, options: AnalysisOptions | None = None):
        self.options = options or AnalysisOptions()
        self.grammars = Grammars()
        self.index = SymbolIndex(self.options, self.grammars)
        self._docs: dict[str, OpenDocument] = {}
        self._own = OwnWorkspace(self.index, self.options)
        self._masks: dict[int, tuple[TokenVocabulary, MaskCache]] = {}   # by id(vocabulary)
        self._masks_lock = threading.Lock()

    # -------------------------------------------------------------- workspace
    # ``self.index`` is fed by the Engine's Workspace, or, used alone, by one of its own.
    def set_workspace_folders(self, folders: list) -> None:
        """Used alone: index ``folders`` (URIs or paths) through a Workspace of its own."""
        self._own.set_folders(folders)

    def index_file(self, path) -> None:
        """Re-index one file from disk now, through the Workspace of its own."""
        self._own.file_changed(path)

    def shutdown(self) -> None:
        self._own.stop()

    # -------------------------------------------------------------- documents
    def open(self, uri: str, text: str, language_id: str = "python") -> None:
        try:
            parser = self.grammars.parser(language_id)
            tree = DocumentTree(language_id, text, parser) if parser is not None else None
            self._docs[uri] = OpenDocument(uri, _path(uri), language_id, tree)
        except Exception:            # noqa: BLE001
            log.exception("cannot parse %s", uri)
            self._docs[uri] = OpenDocument(uri, _path(uri), language_id, None)

    def change(self, uri: str, new_text: str, edit: TextEdit | None = None) -> None:
        """Reparse incrementally to ``new_text``; ``edit`` (character offsets) is computed when
        omitted."""
        doc = self._docs.get(uri)
        if doc is None or doc.tree is None:
            return
        try:
            doc.tree.edit(new_text, edit)
        except Exception:            # noqa: BLE001
            log.exception("incremental parse of %s failed; parsing afresh", uri)
            self.open(uri, new_text, doc.language)

    def prepare(self, uri: str) -> None:
        """Extract what the next monitor at ``uri`` reads, during the editor's debounce after an
        edit, so a completion finds it ready."""
        doc = self._docs.get(uri)
        if doc is None or doc.tree is None or not self.grammars.monitored(doc.language):
            return
        try:
            symbols = self.symbols(uri)
            if symbols is not None and symbols.parsed:
                readable_names(doc, symbols, self.index)
        except Exception:            # noqa: BLE001
            log.exception("preparing the analysis of %s failed", uri)

    def close(self, uri: str) -> None:
        doc = self._docs.pop(uri, None)
        if doc is not None and doc.path is not None and doc.symbols is not None:
            self.index.drop_document(doc.path)

    def text(self, uri: str) -> str | None:
        doc = self._docs.get(uri)
        return doc.tree.text if doc is not None and doc.tree is not None else None

    def tree(self, uri: str):
        doc = self._docs.get(uri)
        return doc.tree.tree if doc is not None and doc.tree is not None else None

    def symbols(self, uri: str) -> FileSymbols | None:
        """The document's symbols, extracted now if it changed since last time."""
        doc = self._docs.get(uri)
        if doc is None or doc.tree is None or doc.language != "python":
            return None
        if doc.symbols_version != doc.tree.version:
            tree = doc.tree
            module = self.index.module_names_for(doc.path) if doc.path is not None else []
            if len(tree.source) > self.options.max_symbol_bytes:
                doc.symbols = FileSymbols.unknown(module[0] if module else "", str(doc.path))
            else:
                doc.symbols = self.index.parsers.extractor().extract(
                    tree.root, module[0] if module else "", str(doc.path or ""),
                    doc.path is not None and doc.path.name == "__init__.py", all_names=False)
            doc.symbols_version = tree.version
            if doc.path is not None:
                self.index.set_document(doc.path, doc.symbols)
        return doc.symbols

    # --------------------------------------------------------------- decoding
    def _masks_for(self, vocab: TokenVocabulary) -> MaskCache:
        """The mask cache of ``vocab``, one per vocabulary."""
        with self._masks_lock:
            if id(vocab) not in self._masks:
                self._masks[id(vocab)] = (vocab, MaskCache(vocab, self.options.mask_cache_bytes))
            return self._masks[id(vocab)][1]

    def monitor(self, uri: str, offset: int, vocab: TokenVocabulary | None = None,
                text: str | None = None) -> MonitorState | None:
        """The monitor state at character ``offset`` of ``uri`` (resynchronised to ``text`` when
        given); None without a monitor for the language or on failure."""
        try:
            return self._monitor(uri, offset, vocab, text)
        except Exception:            # noqa: BLE001
            log.exception("no monitor for %s at %d", uri, offset)
            return None

    def _monitor(self, uri, offset, vocab, text) -> MonitorState | None:
        doc = self._docs.get(uri)
        if doc is None or doc.tree is None or not self.grammars.monitored(doc.language):
            return None
        if text is not None and text != doc.tree.text:
            self.change(uri, text)
        symbols = self.symbols(uri)
        if symbols is None or not symbols.parsed:
            return None
        tree, text = doc.tree, doc.tree.text
        scope = cursor_scope(symbols, text, offset, tree.root, self.index.parsers.extractor(),
                             doc.kept_headers)
        start = scan_start(tree.root, text, offset, headers=scope.headers)
        scan = scan_state(doc, text[start:offset], start)
        masks = self._masks_for(vocab) if vocab is not None else None
        context = MonitorContext(scope, Resolver(self.index), self.index, masks,
                                 self.options.statement_start_self,
                                 readable=lambda: readable_names(doc, symbols, self.index))
        return MonitorState.at(context, scan)

    def guard(self, uri: str, offset: int) -> SyntaxGuard | None:
        """The syntax guard at ``offset`` of ``uri``; None without a grammar."""
        doc = self._docs.get(uri)
        if doc is None or doc.tree is None:
            return None
        text, scan = doc.tree.text, None
        if doc.language in SCANNED_LANGUAGES:      # the same scan and headers as the monitor's
            headers = enclosing_headers(text, offset, doc.tree.root, doc.kept_headers)
            start = scan_start(doc.tree.root, text, offset, headers=headers)
            scan = scan_state(doc, text[start:offset], start)
        return SyntaxGuard(text, offset, doc.language, self.grammars,
                           tree=doc.tree.tree.copy(),
                           open_string=string_quote(scan) if scan is not None else "", scan=scan)

    # ---------------------------------------------------------------- metrics
    def undefined_names(self, uri: str, offset: int, draft: str) -> list[str] | None:
        """Names ``draft`` at ``offset`` uses that cannot be right; None if not Python or failed."""
        doc = self._docs.get(uri)
        if doc is None or doc.tree is None or doc.language != "python":
            return None
        try:
            self.symbols(uri)
            return DraftNames(self.index).undefined(doc.tree.text, offset, draft,
                                                    str(doc.path or ""))
        except Exception:            # noqa: BLE001
            log.exception("undefined_names failed at %s:%d", uri, offset)
            return None

    def trigger_identifier(self, uri: str, offset: int, expected: str
                           ) -> TriggerIdentifier | None:
        """The first identifier right after a resolvable trigger in ``expected``."""
        state = self.monitor(uri, offset)
        if state is None:
            return None
        try:
            return first_trigger_identifier(state, expected)
        except Exception:            # noqa: BLE001
            log.exception("trigger_identifier failed at %s:%d", uri, offset)
            return None

