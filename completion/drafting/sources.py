"""Where one Engine's drafts and n-gram counts come from: the document, the workspace, accepted
completions, recent suggestions and both datastores; owned by the engine's thread."""
from __future__ import annotations

import logging
import threading
from concurrent.futures import Future

from inkling.analysis.workspace import Workspace
from inkling.runtime.model_runtime import ModelRuntime

from inkling.completion.errors import InklingError, OptionError
from inkling.completion.prompt.builder import normalise_eol
from inkling.completion.drafting import model_datastore as md
from inkling.completion.drafting.datastore import Datastore, Deferred, build_datastore
from inkling.completion.drafting.document_tokens import DocumentTokens
from inkling.completion.drafting.suffix_index import LazyIndex, SuffixIndex
from inkling.completion.drafting.suggestion_history import SuggestionHistory
from inkling.completion.drafting.workspace_index import WorkspaceIndex

log = logging.getLogger("inkling.drafting")


class DraftSources:
    def __init__(self, datastore: Datastore | None = None):
        self.history = SuffixIndex(min_merge=512)    # accepted completions
        self.workspace: WorkspaceIndex | None = None  # the workspace's files, once indexed
        self.datastore = datastore                   # the corpus datastore, once built
        self.deferred: Deferred | None = None        # the datastore another process builds
        self._taking: Future | None = None           # its load, on a thread, once built
        self._documents: dict[str, tuple[str, int, LazyIndex]] = {}   # uri -> (text, offset, index)
        self._suggestions: dict[str, SuggestionHistory] = {}
        self._tokens: DocumentTokens | None = None   # paragraphs tokenized once
        self._warned: set = set()                    # problems logged once

    def forget(self, uri: str) -> None:
        """``uri`` was closed."""
        self._documents.pop(uri, None)
        self._suggestions.pop(uri, None)

    def accepted(self, ids: list[int]) -> None:
        """A draft the user accepted, tokenized: what the history source searches."""
        self.history.append(ids)

    def suggested(self, uri: str, prefix_ids: list[int], outputs: list[list[int]]) -> None:
        """Keep the drafts just made (their ids) as the document's most recent suggestions."""
        history = self._suggestions.setdefault(uri, SuggestionHistory())
        for ids in outputs:
            history.add(list(prefix_ids), ids)

    def indexes(self, uri: str, text: str, offset: int, runtime: ModelRuntime) -> dict:
        """The document, workspace and accepted-completion indexes; the document's (built lazily) is
        split at the cursor, lest the cursor's own context draft the text after it."""
        cached = self._documents.get(uri)
        if cached is None or cached[0] is not text or cached[1] != offset:
            if self._tokens is None or self._tokens.encode != runtime.encode:
                self._tokens = DocumentTokens(runtime.encode)
            tokens = self._tokens

            def build() -> SuffixIndex:
                index = SuffixIndex(layout="hashed")      # rebuilt at every completion
                index.put_many([(f"{uri}#before", tokens.ids(normalise_eol(text[:offset]))),
                                (f"{uri}#after", tokens.ids(normalise_eol(text[offset:])))])
                return index
            cached = self._documents[uri] = (text, offset, LazyIndex(build))
        sources = {"document": cached[2], "history": self.history}
        if self.workspace is not None:
            sources["workspace"] = self.workspace
        return sources

    def ngram_sources(self, uri: str, text: str, offset: int, runtime: ModelRuntime) -> dict:
        """What superposed decoding takes n-gram counts from: the indexes and the corpus."""
        sources = self.indexes(uri, text, offset, runtime)
        if self._current_datastore(runtime) is not None:
            sources["datastore"] = self.datastore
        return sources

    def draft_sources(self, uri: str, text: str, offset: int, runtime: ModelRuntime,
                      model_spec: str) -> dict:
        """What the suffix drafter searches: the indexes, recent suggestions, both datastores."""
        sources = self.indexes(uri, text, offset, runtime)
        if uri in self._suggestions:
            sources["suggestions"] = self._suggestions[uri]
        if self._current_datastore(runtime) is not None:
            sources["datastore"] = self.datastore
        model_store = self.model_datastore(runtime, model_spec)
        if model_store is not None:
            sources["model"] = model_store
        return sources

    def reconfigure(self, spec: str) -> None:
        """``completion.datastore`` is now ``spec``: another spec's datastore is dropped."""
        if self.datastore is not None and self.datastore.spec != spec:
            self.datastore = None
        if self.deferred is not None and self.deferred.spec != spec:
            self.deferred = self._taking = None

    def build_datastore(self, spec: str, runtime: ModelRuntime, progress=None,
                        wait: bool = True) -> Datastore | Deferred | None:
        """The datastore ``spec`` names (None for ``none``), built once and kept; Deferred where
        another process builds it and not ``wait`` (taken up by a later completion)."""
        if self.datastore is None or self.datastore.spec != spec:
            built = build_datastore(spec, runtime.tokenizer.to_str(), runtime.encode_batch,
                                    progress, wait=wait)
            self.deferred = built if isinstance(built, Deferred) else None
            if self.deferred is not None:
                return self.deferred
            self.datastore = built
        return self.datastore

    def _current_datastore(self, runtime: ModelRuntime) -> Datastore | None:
        """The datastore; a deferred one is loaded on a thread once its builder has ended (a
        lock probe per call) and kept here once loaded, so that no completion waits for it."""
        d, taking = self.deferred, self._taking
        if d is None or self.datastore is not None:
            return self.datastore
        if taking is None and d.ready():
            self._taking = _in_background(build_datastore, d.spec, runtime.tokenizer.to_str(),
                                          runtime.encode_batch, None, None, False)
        elif taking is not None and taking.done():
            self._taking = None
            self._took(d, taking)
        return self.datastore

    def _took(self, d: Deferred, taking: Future) -> None:
        try:
            built = taking.result()
        except (InklingError, OSError) as exc:
            self.deferred = None
            log.warning("datastore %s not taken up (%s); drafting goes on without it",
                        d.spec, exc)
            return
        self.deferred = built if isinstance(built, Deferred) else None   # a third builder
        if isinstance(built, Datastore):
            self.datastore = built
            log.info("%s; taken up after the build by %s", built.summary(), d.holder)

    def model_datastore(self, runtime: ModelRuntime, spec: str):
        """The model datastore ``spec`` names, or None, loaded once per model and file; a named file
        that cannot serve raises OptionError, ``auto``'s own is skipped with one warning."""
        path = md.resolve(spec, runtime.path)
        if path is None:
            return None
        try:
            key = ("model_datastore", str(path.resolve()), path.stat().st_mtime_ns)
        except OSError as exc:
            raise OptionError(f"model datastore {path}: {exc.strerror}") from None
        if key not in runtime.attached:            # the store, or why it cannot be used
            try:
                runtime.attached[key] = md.load(path, runtime.path)
            except OptionError as exc:
                runtime.attached[key] = exc
        found = runtime.attached[key]
        if not isinstance(found, OptionError):
            return found
        if spec != "auto":
            raise found
        if key not in self._warned:
            self._warned.add(key)
            log.warning("%s; drafting goes on without it", found)
        return None

    def index_workspace(self, workspace: Workspace, runtime: ModelRuntime) -> WorkspaceIndex:
        """The WorkspaceIndex subscribed to ``workspace``, made again for another tokenizer."""
        index = self.workspace
        if index is not None and index.encode_batch != runtime.encode_batch:
            workspace.unsubscribe(index)
            index = None
        if index is None:
            index = self.workspace = WorkspaceIndex(runtime.encode_batch)
            workspace.subscribe(index)
        return index


def _in_background(call, *args) -> Future:
    """``call(*args)`` on a daemon thread of its own (exit never waits for it): its Future."""
    future: Future = Future()

    def run() -> None:
        try:
            future.set_result(call(*args))
        except BaseException as exc:     # noqa: BLE001 - handed to the Future's reader
            future.set_exception(exc)
    threading.Thread(target=run, name="inkling-datastore-load", daemon=True).start()
    return future
