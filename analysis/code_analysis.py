"""The analysis layer's facade: what the Engine (and the replay's metrics) call.

Lifecycle (the Engine's side)::

    analysis = CodeAnalysis(AnalysisOptions())
    workspace.subscribe(analysis.index)       # a Workspace (analysis/workspace.py)
    analysis.open(uri, text, language_id)                      # didOpen
    analysis.change(uri, new_text, TextEdit(start, old_end, new_end))   # didChange
    analysis.close(uri)                                        # didClose

Per completion::

    vocab = analysis.vocabulary(runtime.tokenizer, runtime.vocab_size)   # cached (the
        # Engine passes the one its model shares instead: completion/open_analysis.py)
    state = analysis.monitor(uri, offset, vocab)      # MonitorState or None (no monitor)
    guard = analysis.guard(uri, offset)               # SyntaxGuard or None (no grammar)

Per decoding step (each path / tree node keeps its own state; states are immutable)::

    mask = state.mask(logits.device)          # None, or torch.bool [vocab]
    if mask is not None: logits = logits.masked_fill(~mask, float("-inf"))
    state = state.advance_token(token_id)     # or state.advance(token_text)

No method raises into the Engine: failures are logged and degrade to "no constraint"
(``monitor`` -> None, ``mask`` -> None).
"""
from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from pathlib import Path

from .analysis_options import AnalysisOptions
from .cursor_scope import cursor_scope
from .document_tree import DocumentTree
from .draft_names import DraftNames, readable_parts
from .grammars import Grammars
from .monitor import MonitorContext, MonitorState
from .open_string import SCANNED_LANGUAGES, string_quote
from .python_scanner import ScanState
from .resolver import Resolver
from .statement_start import scan_start
from .symbol_index import SymbolIndex
from .symbols import FileSymbols
from .syntax_guard import SyntaxGuard
from .text_edit import TextEdit
from .token_masks import MaskCache
from .trigger_identifier import TriggerIdentifier, first_trigger_identifier
from .vocabulary import TokenVocabulary
from .workspace import Workspace, WorkspaceLimits
from .workspace import local_path as _path

log = logging.getLogger(__name__)


@dataclass
class OpenDocument:
    uri: str
    path: Path | None
    language: str
    tree: DocumentTree | None          # None: no grammar for the language
    symbols: FileSymbols | None = None
    symbols_version: int = -1
    free_names: tuple | None = None         # what a free read may name (``readable_parts``)
    free_version: int = -1                  # the tree version and the workspace's names
    free_workspace: frozenset | None = None  # (an index change makes a new set) they are of
    # the last monitor's lexical scan: (the text scanned, from where, the state after it);
    # the next keystroke's scan in the same statement goes on from it
    scanned: tuple[str, int, ScanState] | None = None


@dataclass
class _VocabularyEntry:
    tokenizer: object                  # kept so that its id is not reused
    vocab: TokenVocabulary
    masks: MaskCache


class CodeAnalysis:
    """Documents, workspace index, monitors and syntax guard for one Engine."""

    def __init__(self, options: AnalysisOptions | None = None):
        self.options = options or AnalysisOptions()
        self.grammars = Grammars()
        self.index = SymbolIndex(self.options, self.grammars)
        self._docs: dict[str, OpenDocument] = {}
        self._workspace: Workspace | None = None   # its own, when used alone
        self._vocabs: dict[int, _VocabularyEntry] = {}
        self._indexers: list[threading.Thread] = []
        self._vocab_lock = threading.Lock()

    # -------------------------------------------------------------- workspace
    # Workspace files reach ``self.index`` (a WorkspaceSubscriber) from a Workspace
    # (analysis/workspace.py): the Engine's, shared with its drafting index
    # (``workspace.subscribe(analysis.index)``), or, for a CodeAnalysis used alone (the
    # replay's metrics, tests, benchmarks), one of its own made by set_workspace_folders.
    def set_workspace_folders(self, folders: list) -> None:
        """Used alone: index ``folders`` (URIs or paths) through a Workspace of its own
        (in a background thread when ``options.background``), watched when
        ``options.watch``."""
        if self._workspace is None:
            o = self.options
            self._workspace = Workspace((), WorkspaceLimits(o.max_files, o.max_file_bytes,
                                                            o.max_total_bytes))
            self._workspace.subscribe(self.index)
        if self.options.background:
            t = threading.Thread(target=self._index_quietly, args=(folders,), daemon=True,
                                 name="inkling-index")
            self._indexers.append(t)
            t.start()
        else:
            self._index_quietly(folders)

    def _index_quietly(self, folders: list) -> None:
        try:
            self._workspace.set_folders(folders)     # walks a folder added since a walk
            self._workspace.walk()                   # the first time
            if self.options.watch:
                self._workspace.start()
        except Exception:            # noqa: BLE001
            log.exception("indexing %s failed", folders)

    def wait_until_indexed(self, timeout: float | None = None) -> bool:
        """Wait for background indexing; True when it has finished."""
        for t in list(self._indexers):
            t.join(timeout)
        return not any(t.is_alive() for t in self._indexers)

    def index_file(self, path) -> None:
        """Re-index one file from disk now (what the watcher does on a change), through
        the Workspace of its own."""
        if self._workspace is not None:
            self._workspace.file_changed(path)

    def shutdown(self) -> None:
        if self._workspace is not None:
            self._workspace.stop()

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
        """The document's text is now ``new_text``; ``edit`` (character offsets) says what
        changed (computed from the texts when omitted). Reparses incrementally; the
        file's symbols are re-extracted lazily, when next needed."""
        doc = self._docs.get(uri)
        if doc is None or doc.tree is None:
            return
        try:
            doc.tree.edit(new_text, edit)
        except Exception:            # noqa: BLE001
            log.exception("incremental parse of %s failed; parsing afresh", uri)
            self.open(uri, new_text, doc.language)

    def prepare(self, uri: str) -> None:
        """Extract now what the next monitor at ``uri`` reads (the symbols, the names a
        free read may name), so that a completion finds them ready: called after an edit,
        while the editor waits out its debounce."""
        doc = self._docs.get(uri)
        if doc is None or doc.tree is None or not self.grammars.monitored(doc.language):
            return
        try:
            symbols = self.symbols(uri)
            if symbols is not None and symbols.parsed:
                self._readable(doc, symbols)
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
                doc.symbols = self.index.extractor().extract(
                    tree.root, module[0] if module else "", str(doc.path or ""),
                    doc.path is not None and doc.path.name == "__init__.py", all_names=False)
            doc.symbols_version = tree.version
            if doc.path is not None:
                self.index.set_document(doc.path, doc.symbols)
        return doc.symbols

    # --------------------------------------------------------------- decoding
    def vocabulary(self, tokenizer, vocab_size: int | None = None) -> TokenVocabulary:
        """The vocabulary index of a ``tokenizers.Tokenizer`` (built once per tokenizer)."""
        return self._vocab_entry(tokenizer, vocab_size).vocab

    def _vocab_entry(self, tokenizer, vocab_size: int | None = None) -> _VocabularyEntry:
        with self._vocab_lock:
            entry = self._vocabs.get(id(tokenizer))
            if entry is None or (vocab_size and entry.vocab.size < vocab_size):
                vocab = TokenVocabulary.from_tokenizer(tokenizer, vocab_size)
                entry = _VocabularyEntry(tokenizer, vocab,
                                         MaskCache(vocab, self.options.mask_cache_bytes))
                self._vocabs[id(tokenizer)] = entry
            return entry

    def masks_for(self, vocab: TokenVocabulary) -> MaskCache:
        with self._vocab_lock:
            for entry in self._vocabs.values():
                if entry.vocab is vocab:
                    return entry.masks
            entry = _VocabularyEntry(None, vocab, MaskCache(vocab, self.options.mask_cache_bytes))
            self._vocabs[id(vocab)] = entry
            return entry.masks

    def monitor(self, uri: str, offset: int, vocab: TokenVocabulary | None = None,
                text: str | None = None) -> MonitorState | None:
        """The monitor state at character ``offset`` of the open document ``uri`` (its
        text must be ``text`` when given; it is re-synchronised if not). None when the
        language has no monitor or anything fails."""
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
        scope = cursor_scope(symbols, text, offset, tree.root, self.index.extractor())
        start = scan_start(tree.root, text, offset, headers=scope.headers)
        scan = self._scan(doc, text[start:offset], start)
        masks = self.masks_for(vocab) if vocab is not None else None
        context = MonitorContext(scope, Resolver(self.index), self.index, masks,
                                 self.options.statement_start_self,
                                 readable=lambda: self._readable(doc, symbols))
        return MonitorState.at(context, scan)

    @staticmethod
    def _scan(doc: OpenDocument, segment: str, start: int) -> ScanState:
        """The scanner's state after ``segment`` (the text from ``start`` to the cursor),
        going on from the last scan when it scanned a prefix of the segment from the
        same place (the person typing on in a statement): the scanner is incremental,
        so that is the state a whole scan gives."""
        last = doc.scanned
        if last is not None and last[1] == start and segment.startswith(last[0]):
            scan = last[2].advance(segment[len(last[0]):])
        else:
            scan = ScanState().advance(segment)
        doc.scanned = (segment, start, scan)
        return scan

    def _readable(self, doc: OpenDocument, symbols: FileSymbols) -> tuple | None:
        """The names a free read in ``doc`` may name, as (workspace's, document's); cached
        per tree version and workspace index (files indexed later change it), and the
        workspace's part is the same set while it is unchanged,
        so its masks are kept from one keystroke to the next."""
        tree, workspace = doc.tree, self.index.workspace_names()
        if doc.free_version != tree.version or doc.free_workspace is not workspace:
            bound = self.index.extractor().bound_names(tree.root)
            parts = readable_parts(symbols, bound, self.index, Resolver(self.index))
            if parts is not None and doc.free_names is not None and parts[0] == doc.free_names[0]:
                parts = (doc.free_names[0], parts[1])        # the same object: masks kept
            doc.free_names = parts
            doc.free_version, doc.free_workspace = tree.version, workspace
        return doc.free_names

    def guard(self, uri: str, offset: int) -> SyntaxGuard | None:
        """The syntax guard at ``offset`` of ``uri``; None without a grammar."""
        doc = self._docs.get(uri)
        if doc is None or doc.tree is None:
            return None
        text, scan = doc.tree.text, None
        if doc.language in SCANNED_LANGUAGES:      # the same scan as the monitor's
            start = scan_start(doc.tree.root, text, offset)
            scan = self._scan(doc, text[start:offset], start)
        return SyntaxGuard(text, offset, doc.language, self.grammars,
                           tree=doc.tree.tree.copy(),
                           open_string=string_quote(scan) if scan is not None else "", scan=scan)

    # ---------------------------------------------------------------- metrics
    def undefined_names(self, uri: str, offset: int, draft: str) -> list[str] | None:
        """Names ``draft`` at ``offset`` uses that cannot be right; None when not Python
        (or the analysis failed)."""
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

