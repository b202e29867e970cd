"""One seeded editor of the soak (evaluation/soak.py) on one connection: it types a standard-
library file into its documents a keystroke at a time, edits far from the cursor, asks for
inline completions (cancelling some soon after), opens and closes documents, and checks the
server's copy of each (``inkling/document``: version and SHA-256) against its own.

Its actions come from its seed alone, never from the answers, so a seed replays the same
session. What the answers show is tallied at the end (``Tally``): every request answered once,
each answer the kind its request asks for and about that request's own document and position
(the marker that a response reached the connection that sent it)."""
from __future__ import annotations

import hashlib
import random
import time
from dataclasses import dataclass

from inkling.completion.document import utf16_len
from inkling.models.corpus import stdlib_root

from inkling.evaluation.soak_tally import DOCUMENT, INLINE, STATS, Tally
from inkling.evaluation.soak_wire import Connection

MAX_IN_FLIGHT = 8        # an editor keeps no more requests unanswered than this
ANSWER_S = 120           # the longest wait for an answer: past it the server has stalled
READY_S = 180            # the longest wait for the server to be ready
FAR_LINES = 10           # a far edit is at least this many lines from the cursor
MAX_DOCS = 3
SOURCES = ("textwrap.py", "shlex.py", "heapq.py", "bisect.py", "fnmatch.py", "calendar.py")
ACTIONS = {"type": 50, "far_edit": 6, "invoke": 8, "cancel": 6, "check": 6, "stats": 2,
           "open": 2, "close": 2, "pause": 10}


class SoakError(Exception):
    """The server could not be driven at all (it refused the session or failed to load)."""


@dataclass
class Doc:
    uri: str
    text: str
    source: str          # what is still to be typed
    cursor: int          # an offset into text
    version: int = 1


def position(text: str, offset: int) -> dict:
    """The LSP position (UTF-16 code units) of a string offset."""
    start = text.rfind("\n", 0, offset) + 1
    return {"line": text.count("\n", 0, offset), "character": utf16_len(text[start:offset])}


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class Editor:
    def __init__(self, name: str, conn: Connection, seed: int):
        self.name, self.conn = name, conn
        self.rng = random.Random(seed)
        self.docs: dict[str, Doc] = {}
        self.active = ""
        self.expect: dict[int, tuple[str, dict | None]] = {}   # id -> (uri, position)
        self.tally = Tally(name)
        self.stalled = False     # a wait ran out: no more waiting, the session ends
        self._opened = 0

    # ------------------------------------------------------------ the session
    def start(self, model: str) -> None:
        """initialize (the model folder as an initialization option), initialized, and wait
        until the server says it is ready."""
        deadline = time.monotonic() + READY_S
        answer = self.conn.wait(self.conn.request("initialize", {
            "processId": None, "rootUri": None, "capabilities": {},
            "initializationOptions": {"model": {"path": model}}}), READY_S)
        if answer is None or "error" in answer:
            raise SoakError(f"{self.name}: initialize was not answered: {answer}")
        self.conn.notify("initialized", {})
        self.conn.wait_for(lambda: self.conn.status.get("state") in ("ready", "error"),
                           deadline - time.monotonic())
        if self.conn.status.get("state") != "ready":
            raise SoakError(f"{self.name}: the server is not ready: {self.conn.status}")

    def run(self, until: float) -> None:
        """Seeded actions until the monotonic time ``until`` (or the connection ends)."""
        names, weights = list(ACTIONS), list(ACTIONS.values())
        try:
            self._open()
            while time.monotonic() < until and not (self.conn.closed or self.stalled):
                getattr(self, "_" + self.rng.choices(names, weights)[0])()
        except OSError as exc:
            self.tally.problem(f"{self.name}: the connection failed: {exc}")

    def finish(self, drop: bool) -> Tally:
        """Leave: ``drop`` closes the connection with requests in flight; otherwise every
        answer is waited for, every document checked, then shutdown and exit."""
        if not drop and not self.conn.closed:
            try:
                self._wait_for(lambda: self.conn.in_flight() == 0)
                for uri in list(self.docs):
                    self._check(uri)
                self._wait(self.conn.request("shutdown", None))
                self.conn.notify("exit", None)
            except OSError as exc:
                self.tally.problem(f"{self.name}: the connection failed at the end: {exc}")
        self.conn.close()
        self.tally.count(self.conn, self.expect, dropped=drop)
        return self.tally

    def _wait_for(self, predicate) -> bool:
        """Wait up to ANSWER_S, not at all once stalled: a stalled server costs one wait."""
        if self.conn.wait_for(predicate, 0 if self.stalled else ANSWER_S):
            return True
        if not (self.stalled or self.conn.closed):
            self.stalled = True
            self.tally.problem(f"{self.name}: no answer within {ANSWER_S} s, "
                               f"{self.conn.in_flight()} requests in flight: stopped")
        return False

    def _wait(self, msg_id: int) -> dict | None:
        self._wait_for(lambda: msg_id in self.conn.responses)
        return self.conn.wait(msg_id, 0)

    # ---------------------------------------------------------------- actions
    def _request(self, method: str, params: dict, uri: str = "", at: dict | None = None) -> int:
        if self.conn.in_flight() >= MAX_IN_FLIGHT:
            self._wait_for(lambda: self.conn.in_flight() < MAX_IN_FLIGHT)
        msg_id = self.conn.request(method, params)
        self.expect[msg_id] = (uri, at)
        return msg_id

    def _inline(self, uri: str, kind: int) -> int:
        doc = self.docs[uri]
        at = position(doc.text, doc.cursor)
        self.tally.completions += 1
        return self._request(INLINE, {"textDocument": {"uri": uri}, "position": at,
                                      "context": {"triggerKind": kind}}, uri, at)

    def _change(self, doc: Doc, start: int, end: int, text: str) -> None:
        rng = {"start": position(doc.text, start), "end": position(doc.text, end)}
        doc.text = doc.text[:start] + text + doc.text[end:]
        doc.version += 1
        self.conn.notify("textDocument/didChange", {
            "textDocument": {"uri": doc.uri, "version": doc.version},
            "contentChanges": [{"range": rng, "text": text}]})

    def _type(self) -> None:
        """A burst of keystrokes at the cursor, most followed by an automatic request."""
        for _ in range(self.rng.randint(1, 4)):
            doc = self.docs[self.active]
            if not doc.source:
                self._close_doc(doc.uri)
                self._open()
                continue
            char, doc.source = doc.source[0], doc.source[1:]
            self._change(doc, doc.cursor, doc.cursor, char)
            doc.cursor += len(char)
            self.tally.keystrokes += 1
            if self.rng.random() < 0.5:
                self._inline(doc.uri, 2)
            time.sleep(self.rng.uniform(0.02, 0.12))

    def _far_edit(self) -> None:
        """A line inserted or deleted at least FAR_LINES lines from the cursor."""
        doc = self.docs[self.active if self.rng.random() < 0.7 else self._any()]
        lines = doc.text.split("\n")
        here = doc.text.count("\n", 0, doc.cursor)
        far = [i for i in range(len(lines) - 1) if abs(i - here) >= FAR_LINES]
        if not far:
            return
        line = self.rng.choice(far)
        start = sum(len(text) + 1 for text in lines[:line])
        if self.rng.random() < 0.5:
            text, end = f"# far edit {self.tally.far_edits}: naïve 😀\n", start
        else:
            text, end = "", start + len(lines[line]) + 1
        self._change(doc, start, end, text)
        if line < here:
            doc.cursor += len(text) - (end - start)
        self.tally.far_edits += 1

    def _invoke(self) -> None:
        """An invoked request, waited for as a person waits for it."""
        self._wait(self._inline(self.active, 1))

    def _cancel(self) -> None:
        msg_id = self._inline(self.active, 1)
        time.sleep(self.rng.uniform(0, 0.05))
        self.conn.notify("$/cancelRequest", {"id": msg_id})
        self.tally.cancels += 1

    def _check(self, uri: str | None = None) -> None:
        """The server's copy of a document against this editor's own."""
        doc = self.docs[uri or self._any()]
        answer = self._wait(self._request(DOCUMENT, {"uri": doc.uri}, doc.uri))
        result = (answer or {}).get("result")
        if not isinstance(result, dict):
            return                         # unanswered or refused: counted by the tally
        self.tally.checks += 1
        if (result.get("version"), result.get("sha256")) != (doc.version, sha256(doc.text)):
            self.tally.desyncs += 1
            self.tally.problem(f"{self.name}: desync on {doc.uri} at version {doc.version}: "
                               f"the server has version {result.get('version')}")

    def _stats(self) -> None:
        self._request(STATS, {})

    def _open(self) -> None:
        if len(self.docs) >= MAX_DOCS:
            return self._type()
        name = self.rng.choice(SOURCES)
        lines = (stdlib_root() / name).read_text(encoding="utf-8").split("\n")
        keep = self.rng.randint(10, 60)
        text = "\n".join(lines[:keep]) + "\n"
        self._opened += 1
        doc = Doc(f"file:///soak/{self.name}/{self._opened}-{name}", text,
                  "\n".join(lines[keep:]), len(text))
        self.docs[doc.uri] = doc
        self.active = doc.uri
        self.conn.notify("textDocument/didOpen", {"textDocument": {
            "uri": doc.uri, "languageId": "python", "version": 1, "text": text}})
        self.tally.opened += 1

    def _close(self) -> None:
        """Close a document other than the active one, sometimes with a request in flight."""
        others = [u for u in self.docs if u != self.active]
        if not others:
            return self._open()
        uri = self.rng.choice(others)
        if self.rng.random() < 0.5:
            self._inline(uri, 1)
        self._close_doc(uri)

    def _close_doc(self, uri: str) -> None:
        self.tally.closed_under |= {i for i in list(self.conn.pending)
                                    if self.expect.get(i, ("",))[0] == uri}
        del self.docs[uri]
        self.conn.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
        self.tally.closed += 1
        if uri == self.active:
            self.active = next(iter(self.docs), "")

    def _pause(self) -> None:
        time.sleep(self.rng.uniform(0.3, 1.5))

    def _any(self) -> str:
        return self.rng.choice(sorted(self.docs))
