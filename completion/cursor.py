"""Where one completion runs: a document's snapshot, the cursor in it, the model."""
from __future__ import annotations

from dataclasses import dataclass

from inkling.runtime.model_runtime import ModelRuntime

from inkling.completion.document import Document, Position


@dataclass(frozen=True)
class Cursor:
    uri: str
    doc: Document            # the document's snapshot when the completion began
    offset: int              # the cursor's, in ``doc.text``
    runtime: ModelRuntime

    @classmethod
    def at(cls, doc: Document, uri: str, position: Position, runtime: ModelRuntime) -> Cursor:
        """The cursor at ``position`` of the snapshot ``doc``."""
        return cls(uri, doc, doc.offset_at(position), runtime)
