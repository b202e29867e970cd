"""Trace parsing: every kind and field validated; errors name the file and the line."""
import json

import pytest

from inkling.completion.document import Position, Range, TextChange
from inkling.evaluation.trace_file import (AcceptEvent, ChangeEvent, CompleteEvent, Header, TraceError,
                                    dump_trace, parse_trace, read_trace)

HEADER = {"kind": "header", "version": 1, "name": "t", "language": "python"}
OPEN = {"kind": "open", "path": "a.py", "text": "x = 1\n"}


def lines(*objs) -> str:
    return "".join((o if isinstance(o, str) else json.dumps(o)) + "\n" for o in objs)


def error_of(text: str, source: str = "t.jsonl") -> TraceError:
    with pytest.raises(TraceError) as info:
        parse_trace(text, source)
    return info.value


def test_parses_every_kind():
    change = {"kind": "change", "path": "a.py", "changes": [
        {"range": {"start": {"line": 0, "character": 4}, "end": {"line": 0, "character": 5}},
         "text": "2"}, {"text": "y = 3\n"}]}
    trace = parse_trace(lines(
        {**HEADER, "description": "d"}, {"kind": "file", "path": "pkg/b.py", "text": ""}, OPEN,
        change, {"kind": "complete", "path": "a.py", "position": {"line": 0, "character": 0},
                 "expected": "y", "trigger": "invoked"},
        {"kind": "accept", "path": "a.py"}, {"kind": "accept", "path": "a.py", "draft": 2},
        {"kind": "check", "path": "a.py", "sha256": "A" * 64}, {"kind": "close", "path": "a.py"}),
        "t.jsonl")
    assert trace.header == Header("t", "python", 1, "d")
    kinds = [type(e).__name__ for e in trace.events]
    assert kinds == ["FileEvent", "OpenEvent", "ChangeEvent", "CompleteEvent", "AcceptEvent",
                     "AcceptEvent", "CheckEvent", "CloseEvent"]
    assert [e.line for e in trace.events] == [2, 3, 4, 5, 6, 7, 8, 9]
    assert trace.events[2].changes == (
        TextChange("2", Range(Position(0, 4), Position(0, 5))), TextChange("y = 3\n"))
    assert trace.events[3].trigger == "invoked"
    assert trace.events[4:6] == (AcceptEvent("a.py", 0, 6), AcceptEvent("a.py", 2, 7))
    assert trace.events[6].sha256 == "a" * 64


def test_malformed_json_names_file_and_line():
    err = error_of(lines(HEADER, OPEN, '{"kind": "close", "path": "a.py"'))
    assert (err.trace, err.line) == ("t.jsonl", 3)
    assert str(err).startswith("t.jsonl:3: malformed JSON")


def test_truncated_last_line_without_newline():
    text = lines(HEADER, OPEN) + '{"kind": "check", "path": "a.py", "sha2'
    assert error_of(text).line == 3


def test_unknown_kind():
    err = error_of(lines(HEADER, OPEN, {"kind": "rename", "path": "a.py"}))
    assert err.line == 3 and "unknown kind 'rename'" in str(err)


def test_missing_header():
    err = error_of(lines(OPEN, {"kind": "close", "path": "a.py"}))
    assert err.line == 1 and "header" in str(err)


def test_empty_trace():
    assert "empty trace" in str(error_of(""))


@pytest.mark.parametrize("event, needle", [
    ({"kind": "open", "path": "a.py"}, "missing field 'text'"),
    ({"kind": "complete", "path": "a.py", "expected": "x"}, "missing field 'position'"),
    ({"kind": "complete", "path": "a.py", "position": {"line": 0}, "expected": "x"},
     "missing field 'character'"),
    ({"kind": "change", "path": "a.py", "changes": [{"range": {"start": {"line": 0,
      "character": 0}}, "text": ""}]}, "missing field 'end'"),
    ({"kind": "check", "path": "a.py"}, "missing field 'sha256'"),
    ({"kind": "close"}, "missing field 'path'"),
    ({"kind": "accept", "draft": 0}, "missing field 'path'"),
    ({"path": "a.py"}, "missing field 'kind'"),
])
def test_missing_fields(event, needle):
    err = error_of(lines(HEADER, event))
    assert err.line == 2 and needle in str(err), str(err)


@pytest.mark.parametrize("event, needle", [
    ({"kind": "open", "path": "a.py", "text": 3}, "'text' must be a string"),
    ({"kind": "open", "path": "/etc/passwd", "text": ""}, "relative"),
    ({"kind": "open", "path": "../a.py", "text": ""}, "relative"),
    ({"kind": "complete", "path": "a.py", "position": {"line": -1, "character": 0},
      "expected": ""}, "negative"),
    ({"kind": "complete", "path": "a.py", "position": {"line": True, "character": 0},
      "expected": ""}, "must be an integer"),
    ({"kind": "complete", "path": "a.py", "position": {"line": 0, "character": 0},
      "expected": "", "trigger": "manual"}, "trigger"),
    ({"kind": "check", "path": "a.py", "sha256": "abc"}, "64 hex digits"),
    ({"kind": "accept", "path": "a.py", "draft": "0"}, "'draft' must be an integer"),
    ({"kind": "accept", "path": "a.py", "draft": 1.0}, "'draft' must be an integer"),
    ({"kind": "accept", "path": "a.py", "draft": True}, "'draft' must be an integer"),
    ({"kind": "accept", "path": "a.py", "draft": -1}, "negative"),
    ({"kind": "accept", "path": "../a.py"}, "relative"),
    ({"kind": "change", "path": "a.py", "changes": {}}, "must be an array"),
    ({**HEADER}, "second header"),
    ([1, 2], "JSON object"),
])
def test_bad_fields(event, needle):
    err = error_of(lines(HEADER, event))
    assert err.line == 2 and needle in str(err), str(err)


def test_header_version_and_blank_lines():
    assert "unsupported version 2" in str(error_of(lines({**HEADER, "version": 2})))
    assert error_of(lines(HEADER, "", OPEN)).line == 2


def test_read_trace_names_the_file(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text(lines(HEADER, "not json"))
    with pytest.raises(TraceError, match=r"bad\.jsonl:2: malformed JSON"):
        read_trace(path)
    with pytest.raises(TraceError, match="gone.jsonl: cannot be read"):
        read_trace(tmp_path / "gone.jsonl")


def test_dump_round_trips():
    text = lines({**HEADER, "description": "d"}, OPEN,
                 {"kind": "change", "path": "a.py", "changes": [
                     {"range": {"start": {"line": 0, "character": 0},
                                "end": {"line": 0, "character": 1}}, "text": "😀"}]},
                 {"kind": "complete", "path": "a.py", "position": {"line": 0, "character": 2},
                  "expected": " = 1"},
                 {"kind": "accept", "path": "a.py"},
                 {"kind": "accept", "path": "a.py", "draft": 1},
                 {"kind": "check", "path": "a.py", "sha256": "0" * 64},
                 {"kind": "close", "path": "a.py"})
    trace = parse_trace(text, "t")
    dumped = dump_trace(trace.header, trace.events)
    assert dumped.splitlines()[4:6] == [      # the default draft is left out, as in the input
        '{"kind": "accept", "path": "a.py"}', '{"kind": "accept", "path": "a.py", "draft": 1}']
    again = parse_trace(dumped, "t")
    assert again == trace
    assert isinstance(again.events[1], ChangeEvent)
    assert isinstance(again.events[2], CompleteEvent)
