"""The analysis layer as one Engine uses it, owned by the Engine's thread: a CodeAnalysis made
when first needed, fed by the workspace, told of every open document and asked for the monitor
and the syntax guard at a cursor."""
from __future__ import annotations

import logging

from inkling.analysis import AnalysisOptions, CodeAnalysis
from inkling.analysis.vocabulary import TokenVocabulary
from inkling.analysis.vocabulary_cache import cached_vocabulary
from inkling.analysis.workspace import Workspace
from inkling.runtime.model_runtime import ModelRuntime

from inkling.completion.document import Document
from inkling.completion.open_documents import OpenDocuments
from inkling.completion.options import CompletionOptions

log = logging.getLogger(__name__)


VOCABULARY = "token_vocabulary"   # runtime.attached: (the monitor's index, read from the cache)


def wanted(c: CompletionOptions) -> bool:
    """Whether the options read the analysis: the monitor, or the imports context."""
    return c.monitor == "on" or c.context in ("imports", "both")


def token_vocabulary(runtime: ModelRuntime) -> TokenVocabulary:
    """The monitor's index of the vocabulary, read from the user cache or built once per
    model and shared, read-only: the preparation makes it, not a first completion
    (docs/decisions/monitor-masks.md)."""
    return vocabulary_and_origin(runtime)[0]


def vocabulary_and_origin(runtime: ModelRuntime) -> tuple[TokenVocabulary, bool]:
    """(``token_vocabulary(runtime)``, whether it was read from the user cache)."""
    found = runtime.attached.get(VOCABULARY)
    if found is None:
        found = runtime.attached[VOCABULARY] = cached_vocabulary(
            runtime.tokenizer, runtime.vocab_size)
    return found


class OpenAnalysis:
    def __init__(self, workspace: Workspace, documents: OpenDocuments):
        self._workspace, self._documents = workspace, documents
        self._analysis: CodeAnalysis | None = None
        self._runtime: ModelRuntime | None = None    # the last completion's
        self._ahead: tuple | None = None      # (uri, text, offset, runtime, (monitor, guard))

    @property
    def made(self) -> bool:
        return self._analysis is not None

    def subscribe(self) -> None:
        """Make it before the workspace's first walk, which then feeds its symbol index."""
        if self._analysis is None:
            self._analysis = self._new()

    def get(self) -> CodeAnalysis:
        """The analysis, made now if it was not (then walking the workspace for its index)."""
        if self._analysis is None:
            self._analysis = self._new()
            if self._workspace.walked:
                self._workspace.walk()
        return self._analysis

    def _new(self) -> CodeAnalysis:
        analysis = CodeAnalysis(AnalysisOptions())
        self._workspace.subscribe(analysis.index)
        for doc in self._documents.values():
            analysis.open(doc.uri, doc.text, doc.language_id)
        return analysis

    def stale(self) -> None:
        """Drop what the last edit made: the workspace or another document changed."""
        self._ahead = None

    def opened(self, doc: Document, c: CompletionOptions) -> None:
        self._ahead = None
        if self._analysis is not None or wanted(c):
            self.get().open(doc.uri, doc.text, doc.language_id)

    def changed(self, doc: Document, c: CompletionOptions, cursor: int | None = None) -> None:
        """``doc`` was edited, leaving the cursor at ``cursor`` (None: unknown). With the monitor
        on, the symbols, monitor and guard there are made now, inside the debounce."""
        if self._analysis is not None:             # tree.edit and an incremental reparse
            self._analysis.change(doc.uri, doc.text)
            if c.monitor == "on":
                self._analysis.prepare(doc.uri)
                if cursor is not None and self._runtime is not None:
                    self._ahead = self._made_ahead(doc, cursor, self._runtime)

    def _made_ahead(self, doc: Document, cursor: int, runtime: ModelRuntime) -> tuple | None:
        """What ``at_cursor`` takes at ``cursor``; None (logged) where making it failed."""
        try:
            _, guard = made = self._made(doc, cursor, runtime)       # (monitor, guard)
            if guard is not None:          # its window parsed, the old text's breaks kept
                guard.prepare()
            return doc.uri, doc.text, cursor, runtime, made
        except Exception:            # noqa: BLE001 - the edit is applied whatever this does
            log.exception("the analysis at %s:%d after an edit failed", doc.uri, cursor)
            return None

    def closed(self, uri: str) -> None:
        self._ahead = None
        if self._analysis is not None:
            self._analysis.close(uri)

    def at_cursor(self, doc: Document, offset: int, runtime: ModelRuntime):
        """Return (monitor state, syntax guard) at ``offset``: the last edit's if for this text,
        else made now; what analysis cannot resolve is unconstrained (None)."""
        ahead, self._runtime = self._ahead, runtime
        if ahead is not None and ahead[0] == doc.uri and ahead[2] == offset and \
                ahead[3] is runtime and ahead[1] == doc.text:
            return ahead[4]
        return self._made(doc, offset, runtime)

    def _made(self, doc: Document, offset: int, runtime: ModelRuntime):
        an = self.get()
        vocab = token_vocabulary(runtime)
        return an.monitor(doc.uri, offset, vocab, text=doc.text), an.guard(doc.uri, offset)
