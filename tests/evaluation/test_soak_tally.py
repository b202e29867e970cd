"""The soak's tally (evaluation/soak_tally.py) sees each way an answer can go wrong: a
connection's record built by hand, each response then counted once, as the soak counts it."""
from __future__ import annotations

import io

from inkling.evaluation.soak_tally import DOCUMENT, INLINE, Tally, fits
from inkling.evaluation.soak_wire import Connection

AT = {"line": 3, "character": 4}


def connection(sent: dict, responses: dict) -> Connection:
    """A Connection whose reader is empty (its thread ends at once), with the record given:
    ``sent`` id -> method, ``responses`` id -> [message], each answered 0.25 s after."""
    conn = Connection(io.BytesIO(b""), io.BytesIO(), lambda: None)
    conn.sent = {i: (method, 10.0) for i, method in sent.items()}
    conn.responses = {i: [(m, 10.25) for m in ms] for i, ms in responses.items()}
    return conn


def inline(at=AT) -> dict:
    return {"result": {"items": [{"insertText": "x", "range": {"start": at, "end": at}}]}}


def counted(sent: dict, responses: dict, dropped: bool = False) -> Tally:
    tally = Tally("t")
    expect = {i: ("file:///a.py", AT if sent[i] == INLINE else None) for i in sent}
    tally.count(connection(sent, responses), expect, dropped)
    return tally


def test_answers_that_fit_are_answered_and_timed():
    t = counted({1: INLINE, 2: DOCUMENT, 3: INLINE},
                {1: [inline()], 2: [{"result": {"uri": "file:///a.py", "sha256": "0"}}],
                 3: [{"error": {"code": -32801, "message": "edited"}}]})
    assert (t.requests, t.answered, t.modified, t.misrouted, t.errors) == (3, 3, 1, 0, 0)
    assert t.latencies_ms == [250.0]
    assert t.problems == []


def test_an_answer_about_another_document_or_position_is_misrouted():
    t = counted({1: DOCUMENT, 2: INLINE, 3: INLINE},
                {1: [{"result": {"uri": "file:///b.py", "sha256": "0"}}],
                 2: [inline({"line": 9, "character": 0})], 3: [{"result": {"uri": "x"}}]})
    assert t.misrouted == 3 and t.answered == 3 and t.latencies_ms == []


def test_a_response_to_an_id_never_sent_is_misrouted():
    t = counted({1: INLINE}, {1: [inline()], 7: [inline()]})
    assert t.misrouted == 1 and "never sent" in t.problems[0]


def test_unanswered_twice_answered_and_unexpected_errors_are_counted():
    t = counted({1: INLINE, 2: INLINE, 3: INLINE},
                {2: [inline(), inline()], 3: [{"error": {"code": -32603, "message": "boom"}}]})
    assert (t.unanswered, t.answered_twice, t.errors, t.answered) == (1, 1, 1, 2)
    assert len(t.problems) == 3


def test_requests_in_flight_at_a_drop_are_dropped_not_unanswered():
    t = counted({1: INLINE, 2: INLINE}, {1: [inline()]}, dropped=True)
    assert (t.dropped, t.unanswered) == (1, 0)


def test_fits_knows_each_request_kind():
    assert fits(INLINE, "u", AT, None)                       # superseded: no result
    assert fits(INLINE, "u", AT, {"items": []})
    assert not fits(INLINE, "u", AT, {"uri": "u"})
    assert fits("shutdown", "", None, None) and not fits("shutdown", "", None, {"items": []})
    assert not fits("initialize", "", None, None)
