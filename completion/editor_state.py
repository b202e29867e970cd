"""What the editor has told the engine (open documents, workspace folders), what is kept in step
with it (analysis, repository context, drafting sources) and what it says at a cursor."""
from __future__ import annotations

from pathlib import Path

from inkling.analysis import CodeAnalysis
from inkling.analysis.workspace import Workspace

from inkling.completion.cursor import Cursor
from inkling.completion.document_caches import DocumentCaches
from inkling.completion.document import Document, TextChange
from inkling.completion.drafting.sources import DraftSources
from inkling.completion.open_analysis import OpenAnalysis
from inkling.completion.open_documents import OpenDocuments
from inkling.completion.options import InklingOptions
from inkling.completion.prompt.context_block import ContextBlock
from inkling.completion.prompt.repo_context import RepoContext


class EditorState:
    def __init__(self, options: InklingOptions, datastore=None):
        self.options = options
        self.documents = OpenDocuments()
        self._folders: list[str] = []              # file:// URIs, from the editor
        self.workspace = Workspace()               # one walk and one watcher of the folders
        self._analysis = OpenAnalysis(self.workspace, self.documents)   # when first needed
        self.sources = DraftSources(datastore)     # what drafting searches
        self.repo_context = RepoContext(self.documents.text_at)
        self.caches = DocumentCaches(options)      # the open documents' KV caches

    @property
    def workspace_folders(self) -> list[str]:
        return self._folders

    @workspace_folders.setter
    def workspace_folders(self, folders: list[str]) -> None:
        self._folders = list(folders)
        self.repo_context.set_folders(self._folders)
        self.workspace.set_folders(self._folders)  # a folder added is walked once prepared

    @property
    def analysis(self) -> CodeAnalysis:
        """tree-sitter documents and the symbol index (made when first needed)."""
        return self._analysis.get()

    def workspace_file_changed(self, path: str) -> None:
        """A file on disk changed: every index takes it now, not when the watcher sees it."""
        self.workspace.file_changed(path)
        self._analysis.stale()
        if self.options.completion.context in ("similar", "both"):
            self.repo_context.touch_file(Path(path))

    def shutdown(self) -> None:
        self.workspace.stop()

    def open(self, uri: str, text: str, version: int = 0, language_id: str = "python") -> None:
        doc = self.documents.open(uri, text, version, language_id)
        self._analysis.opened(doc, self.options.completion)
        self.repo_context.touch(uri, lambda: doc.text)

    def apply_change(self, uri: str, changes: list[TextChange], version: int | None = None) -> None:
        doc = self.documents.apply(uri, changes, version)
        self._analysis.changed(doc, self.options.completion, edit_end(doc, changes))
        self.repo_context.touch(uri, lambda: doc.text)

    def close(self, uri: str) -> None:
        self.documents.close(uri)
        self.caches.discard(uri)                   # its budget is the open documents'
        self.sources.forget(uri)
        self.repo_context.forget(uri)
        self._analysis.closed(uri)

    def document(self, uri: str) -> Document:
        return self.documents.get(uri)

    def document_sha256(self, uri: str) -> str:
        return self.documents.sha256(uri)

    def subscribe_analysis(self) -> None:
        """The analysis' symbol index is fed by the workspace's walk from now on."""
        self._analysis.subscribe()

    def context_block(self, at: Cursor) -> ContextBlock:
        """The repository-context block ``completion.context`` asks for at the cursor."""
        return self.repo_context.at_cursor(self.options.completion, at.doc, at.offset,
                                           at.runtime, self._analysis.get)

    def monitor_and_guard(self, at: Cursor) -> tuple:
        """(monitor state, syntax guard) at the cursor; (None, None) with the monitor off."""
        if self.options.completion.monitor != "on":
            return None, None
        return self._analysis.at_cursor(at.doc, at.offset, at.runtime)

    def draft_sources(self, at: Cursor) -> dict:
        """What suffix drafting searches at the cursor."""
        return self.sources.draft_sources(at.uri, at.doc.text, at.offset, at.runtime,
                                          self.options.completion.model_datastore)

    def ngram_sources(self, at: Cursor) -> dict:
        """What superposed decoding counts n-grams in at the cursor."""
        return self.sources.ngram_sources(at.uri, at.doc.text, at.offset, at.runtime)


def edit_end(doc: Document, changes: list[TextChange]) -> int | None:
    """The end of the text the last of ``changes`` inserted; None for a whole-document change."""
    last = changes[-1] if changes else None
    if last is None or last.range is None:
        return None
    return doc.offset_at(last.range.start) + len(last.text)
