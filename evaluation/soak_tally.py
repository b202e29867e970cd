"""What a soak editor's session showed (evaluation/soak_editor.py), counted from its connection's
record once the session is over: each request answered once or not at all, each answer of the
kind its request asks for and about its own document and position (else misrouted), each error
one of the two a busy editor expects, and the round trip of every inline completion answered."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from inkling.evaluation.soak_wire import Connection

INLINE, DOCUMENT, STATS = "textDocument/inlineCompletion", "inkling/document", "inkling/stats"
CANCELLED, MODIFIED = -32800, -32801       # after $/cancelRequest; the document changed first
MAX_PROBLEMS = 20                          # the first problems kept, to say what went wrong


@dataclass
class Tally:
    name: str
    started: int = 0               # sessions the server made ready
    requests: int = 0
    answered: int = 0
    unanswered: int = 0
    dropped: int = 0               # in flight when the editor dropped its connection
    answered_twice: int = 0
    misrouted: int = 0
    errors: int = 0                # errors other than cancelled and modified
    cancelled: int = 0
    modified: int = 0
    desyncs: int = 0
    checks: int = 0
    completions: int = 0
    cancels: int = 0
    keystrokes: int = 0
    far_edits: int = 0
    opened: int = 0
    closed: int = 0
    latencies_ms: list[float] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    closed_under: set[int] = field(default_factory=set)   # ids in flight when their document closed

    def problem(self, text: str) -> None:
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append(text)

    def counts(self) -> dict[str, int]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
                if f.type in (int, "int")}

    def count(self, conn: Connection, expect: dict, dropped: bool) -> None:
        """Count every request ``conn`` sent and every response it got; ``expect`` holds each
        request's (uri, position)."""
        for msg_id, (method, sent_at) in conn.sent.items():
            self.requests += 1
            got = conn.responses.get(msg_id)
            if not got:
                if dropped:
                    self.dropped += 1
                else:
                    self.unanswered += 1
                    self.problem(f"{self.name}: {method} {msg_id} was not answered")
                continue
            self.answered += 1
            if len(got) > 1:
                self.answered_twice += 1
                self.problem(f"{self.name}: {method} {msg_id} was answered {len(got)} times")
            message, at = got[0]
            self._answer(method, msg_id, expect.get(msg_id, ("", None)), message,
                         (at - sent_at) * 1000)
        for msg_id, got in conn.responses.items():
            if msg_id not in conn.sent:
                self.misrouted += len(got)
                self.problem(f"{self.name}: a response to id {msg_id!r}, never sent here")

    def _answer(self, method: str, msg_id: int, expected: tuple, message: dict,
                ms: float) -> None:
        error = message.get("error")
        if error is not None:
            code = error.get("code")
            if code in (CANCELLED, MODIFIED):
                self.cancelled += code == CANCELLED
                self.modified += code == MODIFIED
            else:
                self.errors += 1
                why = " (its document was closed after it was sent: expected -32801)" \
                    if msg_id in self.closed_under else ""
                self.problem(f"{self.name}: {method} {msg_id} got error {error}{why}")
            return
        result = message.get("result")
        if not fits(method, *expected, result):
            self.misrouted += 1
            self.problem(f"{self.name}: {method} {msg_id} about {expected} got {result!r:.200}")
        elif method == INLINE and result is not None:
            self.latencies_ms.append(ms)


def fits(method: str, uri: str, at: dict | None, result) -> bool:
    """Whether ``result`` is an answer to ``method`` about ``uri`` at ``at``."""
    if method == INLINE:
        items = result.get("items") if isinstance(result, dict) else result
        return result is None or (isinstance(items, list) and all(
            isinstance(i, dict) and (i.get("range") or {}).get("start") == at for i in items))
    if method == DOCUMENT:
        return isinstance(result, dict) and result.get("uri") == uri
    if method == STATS:
        return isinstance(result, dict) and "requests" in result
    if method == "initialize":
        return isinstance(result, dict) and "capabilities" in result
    return result is None                  # shutdown


def merge(name: str, tallies: list[Tally]) -> Tally:
    """The sessions' tallies added up."""
    out = Tally(name)
    for t in tallies:
        for key, value in t.counts().items():
            setattr(out, key, getattr(out, key) + value)
        out.latencies_ms += t.latencies_ms
        out.problems += t.problems[:MAX_PROBLEMS - len(out.problems)]
    return out
