"""The documents the editor has open, and the edits each had since its cache last synced."""
from __future__ import annotations

import hashlib
from pathlib import Path

from inkling.completion.document import Document, TextChange
from inkling.completion.edit_extent import EditExtent
from inkling.completion.errors import DocumentError
from inkling.completion.prompt.repo_context import uri_path


class OpenDocuments:
    def __init__(self):
        self._documents: dict[str, Document] = {}
        self._extents: dict[str, EditExtent] = {}   # edits since each document's last sync

    def open(self, uri: str, text: str, version: int = 0, language_id: str = "python"
             ) -> Document:
        self._documents[uri] = doc = Document(uri, text, version, language_id)
        self._extents[uri] = EditExtent(0, 0)      # a new text: nothing in a cache is current
        return doc

    def apply(self, uri: str, changes: list[TextChange], version: int | None = None
              ) -> Document:
        """Apply LSP changes in order; nothing is applied if any is invalid."""
        doc = self.get(uri)
        doc.apply(changes, version, self._extents.setdefault(uri, EditExtent()))
        return doc

    def close(self, uri: str) -> None:
        self.get(uri)
        del self._documents[uri]
        self._extents.pop(uri, None)

    def get(self, uri: str) -> Document:
        try:
            return self._documents[uri]
        except KeyError:
            raise DocumentError(f"unknown document {uri} (it was never opened, or was closed)") \
                from None

    def uris(self) -> list[str]:
        return list(self._documents)

    def values(self) -> list[Document]:
        return list(self._documents.values())

    def sha256(self, uri: str) -> str:
        return hashlib.sha256(self.get(uri).text.encode("utf-8")).hexdigest()

    def text_at(self, path: Path) -> str | None:
        """The text of the open document at ``path``, or None."""
        for uri, doc in self._documents.items():
            if uri_path(uri) == path:
                return doc.text
        return None

    def take_extent(self, uri: str) -> EditExtent:
        """The edits since the last sync; edits from here on count for the next one."""
        return self._extents.pop(uri, None) or EditExtent()

    def give_back(self, uri: str, extent: EditExtent) -> None:
        """A completion that failed gives back the edits it took (none is lost)."""
        if uri in self._documents:
            self._extents.setdefault(uri, EditExtent()).note(extent.first_line,
                                                             extent.lines_below)
