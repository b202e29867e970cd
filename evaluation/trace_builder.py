"""Writes a trace event by event, keeping every document's text so positions are computed
against the text as it is then; changes go through the Engine's Document, so a trace replays in
sync by construction."""
from __future__ import annotations

import hashlib
import random
import re
from pathlib import Path

from inkling.completion.document import Document, Range, TextChange

from inkling.evaluation.trace_file import (AcceptEvent, ChangeEvent, CheckEvent, CloseEvent,
                                           CompleteEvent, Event, FileEvent, Header, OpenEvent,
                                           Trace, write_trace)

_LINE = re.compile(r"[^\n]*\n|[^\n]+$")
_LINE_BREAK = re.compile(r"\r\n|\r|\n")     # LSP line breaks
_TYPING_TOKEN = re.compile(r"\w+|[ \t]+|[^\w \t]")
# where an editor asks again mid-line: after ``name.`` / ``call().`` and ``import ``
_MID_LINE_TRIGGER = re.compile(r"(?<=[\w)\]])\.(?=[A-Za-z_])|\bimport (?=[A-Za-z_])")


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def split_lines(text: str) -> list[str]:
    """Lines with their ``\\n`` kept (git's notion of a line; a ``\\r`` stays in its line)."""
    return _LINE.findall(text)


def line_offsets(text: str) -> list[int]:
    """Offset of the start of each ``\\n``-separated line, plus ``len(text)`` at the end."""
    offsets = [0]
    for line in split_lines(text):
        offsets.append(offsets[-1] + len(line))
    if offsets[-1] != len(text):
        raise AssertionError("line split lost characters")
    return offsets


def typing_chunks(text: str, rng: random.Random) -> list[str]:
    """``text`` cut into pieces of one to three words or symbols, as a person types them."""
    tokens = _TYPING_TOKEN.findall(text)
    if "".join(tokens) != text:
        tokens = list(text)
    chunks, i = [], 0
    while i < len(tokens):
        n = rng.randint(1, 3)
        chunks.append("".join(tokens[i:i + n]))
        i += n
    return chunks


def _pieces(body: str, start: int, mid_line: bool) -> list[str]:
    """``body[start:]`` cut just after each mid-line trigger (one piece if not ``mid_line``)."""
    cuts = [m.end() for m in _MID_LINE_TRIGGER.finditer(body, start)] if mid_line else []
    bounds = [start] + cuts + [len(body)]
    return [body[a:b] for a, b in zip(bounds, bounds[1:]) if b > a]


class TraceBuilder:
    def __init__(self, header: Header):
        self.header = header
        self.events: list[Event] = []
        self._docs: dict[str, Document] = {}

    # ------------------------------------------------------------------ events
    def file(self, path: str, text: str) -> None:
        self.events.append(FileEvent(path, text))

    def open(self, path: str, text: str) -> None:
        if path in self._docs:
            raise ValueError(f"{path} is already open")
        self._docs[path] = Document(path, text)
        self.events.append(OpenEvent(path, text))

    def close(self, path: str) -> None:
        self._doc(path)
        del self._docs[path]
        self.events.append(CloseEvent(path))

    def text(self, path: str) -> str:
        return self._doc(path).text

    def replace(self, path: str, start: int, end: int, new_text: str) -> None:
        """Replace characters [start, end) of the document with ``new_text``."""
        doc = self._doc(path)
        old = doc.text
        if not 0 <= start <= end <= len(old):
            raise ValueError(f"{path}: range {start}..{end} is outside the document "
                             f"({len(old)} characters)")
        if start == end and not new_text:
            return
        change = TextChange(new_text, Range(doc.position_at(start), doc.position_at(end)))
        doc.apply([change])
        if doc.text != old[:start] + new_text + old[end:]:
            raise AssertionError(f"{path}: the change at {start}..{end} did not round-trip "
                                 "through LSP positions")
        self.events.append(ChangeEvent(path, (change,)))

    def insert(self, path: str, offset: int, new_text: str) -> None:
        self.replace(path, offset, offset, new_text)

    def delete(self, path: str, start: int, end: int) -> None:
        self.replace(path, start, end, "")

    def complete(self, path: str, offset: int, expected: str, trigger: str = "automatic",
                 accept: bool = False) -> None:
        """A completion request; with ``accept``, an accept event follows when ``expected``
        has a first line to take."""
        doc = self._doc(path)
        self.events.append(CompleteEvent(path, doc.position_at(offset), expected, trigger))
        if accept and _LINE_BREAK.split(expected, 1)[0].strip():
            self.accept(path)

    def accept(self, path: str, draft: int = 0) -> None:
        self._doc(path)
        self.events.append(AcceptEvent(path, draft))

    def check(self, path: str) -> None:
        self.events.append(CheckEvent(path, sha256_text(self.text(path))))

    # ------------------------------------------------------------------ typing
    def type_segment(self, path: str, offset: int, segment: str, rng: random.Random,
                     mid_line: bool = True, accept: bool = False) -> int:
        """Type ``segment`` (whole lines) at line start ``offset`` as a person would, asking for
        a completion per line (and after mid-line triggers with ``mid_line``, each followed by an
        accept with ``accept``); returns the offset after the segment."""
        lines = split_lines(segment)
        done = 0
        for line in lines:
            body = line.rstrip("\r\n")
            eol = line[len(body):]
            if eol:
                self.insert(path, offset, eol)
            indent = body[:len(body) - len(body.lstrip(" \t"))]
            self.insert(path, offset, indent)
            offset += len(indent)
            if body.strip():
                self.complete(path, offset, segment[done + len(indent):], accept=accept)
            start = len(indent)
            for piece in _pieces(body, start, mid_line):
                for chunk in typing_chunks(piece, rng):
                    self.insert(path, offset, chunk)
                    offset += len(chunk)
                start += len(piece)
                if start < len(body):       # a trigger ends the piece: ask there too
                    self.complete(path, offset, segment[done + start:], accept=accept)
            offset += len(eol)
            done += len(line)
        return offset

    # ------------------------------------------------------------------ output
    def trace(self, source: str = "") -> Trace:
        return Trace(source or self.header.name, self.header, tuple(self.events))

    def write(self, path: Path) -> Path:
        return write_trace(path, self.header, self.events)

    def _doc(self, path: str) -> Document:
        try:
            return self._docs[path]
        except KeyError:
            raise ValueError(f"{path} is not open") from None
