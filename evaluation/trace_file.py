"""Edit traces on disk: JSON Lines, a header then events (see docs/evaluation.md).

``read_trace`` raises :class:`TraceError` naming the file and line; ``dump_trace`` writes back."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Union

from inkling.completion.decoding.names import Trigger
from inkling.completion.document import Position, Range, TextChange
from inkling.completion.errors import InklingError

TRACE_VERSION = 1
TRIGGERS = tuple(t.value for t in Trigger)


class TraceError(InklingError):
    """A trace that cannot be read or replayed: names the trace file and the line."""

    def __init__(self, trace: str, line: int | None, message: str):
        self.trace, self.line, self.message = trace, line, message
        where = f"{trace}:{line}" if line is not None else trace
        super().__init__(f"{where}: {message}")


@dataclass(frozen=True)
class Header:
    name: str
    language: str
    version: int = TRACE_VERSION
    description: str = ""


@dataclass(frozen=True)
class FileEvent:
    path: str
    text: str
    line: int = 0


@dataclass(frozen=True)
class OpenEvent:
    path: str
    text: str
    line: int = 0


@dataclass(frozen=True)
class ChangeEvent:
    path: str
    changes: tuple[TextChange, ...]
    line: int = 0


@dataclass(frozen=True)
class CompleteEvent:
    path: str
    position: Position
    expected: str
    trigger: Trigger = Trigger.AUTOMATIC
    line: int = 0


@dataclass(frozen=True)
class AcceptEvent:
    """Take draft ``draft`` of ``path``'s latest completion if its first line was typed next;
    decided at replay, since a trace cannot know the drafts (the text comes as changes)."""
    path: str
    draft: int = 0
    line: int = 0


@dataclass(frozen=True)
class CheckEvent:
    path: str
    sha256: str
    line: int = 0


@dataclass(frozen=True)
class CloseEvent:
    path: str
    line: int = 0


Event = Union[FileEvent, OpenEvent, ChangeEvent, CompleteEvent, AcceptEvent, CheckEvent,
              CloseEvent]


@dataclass(frozen=True)
class Trace:
    source: str              # the trace file, as named on the command line
    header: Header
    events: tuple[Event, ...]

    @property
    def name(self) -> str:
        return self.header.name


class _Fields:
    """Typed access to one JSON object's fields; a bad field raises TraceError."""

    def __init__(self, obj: dict, trace: str, line: int, what: str):
        self.obj, self.trace, self.line, self.what = obj, trace, line, what

    def fail(self, message: str) -> TraceError:
        return TraceError(self.trace, self.line, f"{self.what}: {message}")

    def get(self, key: str, kind: type | tuple, default=None, required: bool = True):
        if key not in self.obj:
            if required:
                raise self.fail(f"missing field {key!r}")
            return default
        value = self.obj[key]
        if isinstance(value, bool) and kind is not bool or not isinstance(value, kind):
            names = kind.__name__ if isinstance(kind, type) else "/".join(k.__name__ for k in kind)
            raise self.fail(f"field {key!r} must be {_ARTICLE.get(names, 'a ' + names)}, "
                            f"got {json.dumps(value)[:60]}")
        return value

    def sub(self, key: str) -> "_Fields":
        return _Fields(self.get(key, dict), self.trace, self.line, f"{self.what} {key}")

    def path(self) -> str:
        raw = self.get("path", str)
        p = PurePosixPath(raw)
        if not raw or p.is_absolute() or ".." in p.parts or "\\" in raw or raw.startswith("~"):
            raise self.fail(f"path {raw!r} must be relative to the workspace root, with / "
                            "separators and no '..'")
        return p.as_posix()

    def position(self, key: str) -> Position:
        pos = self.sub(key)
        line, character = pos.get("line", int), pos.get("character", int)
        if line < 0 or character < 0:
            raise self.fail(f"{key} {line}:{character} is negative")
        return Position(line, character)


_ARTICLE = {"str": "a string", "int": "an integer", "dict": "an object", "list": "an array"}


def _change(f: _Fields, index: int, raw) -> TextChange:
    if not isinstance(raw, dict):
        raise f.fail(f"changes[{index}] must be an object")
    c = _Fields(raw, f.trace, f.line, f"{f.what} changes[{index}]")
    text = c.get("text", str)
    if "range" not in raw:
        return TextChange(text)
    rng = c.sub("range")
    return TextChange(text, Range(rng.position("start"), rng.position("end")))


def _file(f: _Fields) -> Event:
    return FileEvent(f.path(), f.get("text", str), f.line)


def _open(f: _Fields) -> Event:
    return OpenEvent(f.path(), f.get("text", str), f.line)


def _change_event(f: _Fields) -> Event:
    raw = f.get("changes", list)
    return ChangeEvent(f.path(), tuple(_change(f, i, c) for i, c in enumerate(raw)), f.line)


def _complete(f: _Fields) -> Event:
    trigger = f.get("trigger", str, "automatic", required=False)
    if trigger not in TRIGGERS:
        raise f.fail(f"trigger must be one of {', '.join(TRIGGERS)}, got {trigger!r}")
    return CompleteEvent(f.path(), f.position("position"), f.get("expected", str),
                         Trigger(trigger), f.line)


def _accept(f: _Fields) -> Event:
    draft = f.get("draft", int, 0, required=False)
    if draft < 0:
        raise f.fail(f"draft {draft} is negative (0 is the first draft)")
    return AcceptEvent(f.path(), draft, f.line)


def _check(f: _Fields) -> Event:
    sha = f.get("sha256", str)
    if len(sha) != 64 or any(ch not in "0123456789abcdef" for ch in sha.lower()):
        raise f.fail(f"sha256 must be 64 hex digits, got {sha!r}")
    return CheckEvent(f.path(), sha.lower(), f.line)


def _close(f: _Fields) -> Event:
    return CloseEvent(f.path(), f.line)


_PARSERS = {"file": _file, "open": _open, "change": _change_event, "complete": _complete,
            "accept": _accept, "check": _check, "close": _close}


def _json_object(raw: str, trace: str, line: int) -> dict:
    try:
        obj = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise TraceError(trace, line, f"malformed JSON ({exc.msg} at column {exc.colno})") \
            from None
    if not isinstance(obj, dict):
        raise TraceError(trace, line, "each line must be a JSON object")
    return obj


def _header(obj: dict, trace: str) -> Header:
    if obj.get("kind") != "header":
        raise TraceError(trace, 1, f"the first line must be the header "
                         f"(kind 'header'), got kind {obj.get('kind')!r}")
    f = _Fields(obj, trace, 1, "header")
    version = f.get("version", int)
    if version != TRACE_VERSION:
        raise f.fail(f"unsupported version {version} (this build reads version {TRACE_VERSION})")
    return Header(f.get("name", str), f.get("language", str), version,
                  f.get("description", str, "", required=False))


def _event(obj: dict, trace: str, line: int) -> Event:
    kind = obj.get("kind")
    if kind == "header":
        raise TraceError(trace, line, "a second header (the header is the first line only)")
    parser = _PARSERS.get(kind) if isinstance(kind, str) else None
    if parser is None:
        if "kind" not in obj:
            raise TraceError(trace, line, "missing field 'kind'")
        raise TraceError(trace, line, f"unknown kind {kind!r} (known: {', '.join(_PARSERS)})")
    return parser(_Fields(obj, trace, line, f"{kind} event"))


def parse_trace(text: str, source: str) -> Trace:
    """Parse a trace's text; ``source`` names it in errors."""
    if not text.strip():
        raise TraceError(source, None, "empty trace (the first line must be the header)")
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    header: Header | None = None
    events: list[Event] = []
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            raise TraceError(source, number, "blank line (every line must be a JSON object)")
        obj = _json_object(raw, source, number)
        if header is None:
            header = _header(obj, source)
        else:
            events.append(_event(obj, source, number))
    return Trace(source, header, tuple(events))


def read_trace(path: str | Path) -> Trace:
    source = str(path)
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise TraceError(source, None, f"cannot be read: {exc.strerror or exc}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise TraceError(source, line, f"not UTF-8 (byte {exc.start})") from None
    return parse_trace(text, source)


# ------------------------------------------------------------------------ writing
def _position_json(p: Position) -> dict:
    return {"line": p.line, "character": p.character}


def _change_json(c: TextChange) -> dict:
    if c.range is None:
        return {"text": c.text}
    return {"range": {"start": _position_json(c.range.start), "end": _position_json(c.range.end)},
            "text": c.text}


def header_json(h: Header) -> dict:
    out = {"kind": "header", "version": h.version, "name": h.name, "language": h.language}
    if h.description:
        out["description"] = h.description
    return out


def event_json(e: Event) -> dict:
    if isinstance(e, (FileEvent, OpenEvent)):
        kind = "file" if isinstance(e, FileEvent) else "open"
        return {"kind": kind, "path": e.path, "text": e.text}
    if isinstance(e, ChangeEvent):
        return {"kind": "change", "path": e.path, "changes": [_change_json(c) for c in e.changes]}
    if isinstance(e, CompleteEvent):
        out = {"kind": "complete", "path": e.path, "position": _position_json(e.position),
               "expected": e.expected}
        if e.trigger != Trigger.AUTOMATIC:
            out["trigger"] = str(e.trigger)
        return out
    if isinstance(e, AcceptEvent):
        out = {"kind": "accept", "path": e.path}
        if e.draft:
            out["draft"] = e.draft
        return out
    if isinstance(e, CheckEvent):
        return {"kind": "check", "path": e.path, "sha256": e.sha256}
    if isinstance(e, CloseEvent):
        return {"kind": "close", "path": e.path}
    raise TypeError(f"not a trace event: {e!r}")


def dump_trace(header: Header, events: list[Event] | tuple[Event, ...]) -> str:
    lines = [json.dumps(header_json(header), ensure_ascii=False)]
    lines += [json.dumps(event_json(e), ensure_ascii=False) for e in events]
    return "\n".join(lines) + "\n"


def write_trace(path: Path, header: Header, events) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dump_trace(header, events), encoding="utf-8", newline="\n")
    return path
