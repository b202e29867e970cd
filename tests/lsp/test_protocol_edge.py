"""The protocol edge, over raw frames to the real server: every request answered once,
no malformed edit applied, lone surrogates harmless, expected errors quiet, exit prompt.
One test per problem found by a random client (the numbers are issue 21's)."""
import hashlib
import time

import pytest

from lsp_wire import Wire

pytestmark = pytest.mark.slow
URI = "file:///ws/edge.py"


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@pytest.fixture(scope="module")
def wire(tiny_model_dir):
    w = Wire(tiny_model_dir, {"completion": {"maxNewTokens": 4, "maxBlockTokens": 4}})
    yield w
    w.kill()


def _error(response: dict) -> dict:
    assert "error" in response, response
    return response["error"]


# 1. requests whose params do not structure are answered, naming the field
def test_unreadable_params_are_answered_with_invalid_params(wire):
    wire.open(URI, "x = 1\n")
    cases = {
        "negative line": ({"textDocument": {"uri": URI}, "position": {"line": -1, "character": 0},
                           "context": {"triggerKind": 1}}, "position"),
        "over 2^31": ({"textDocument": {"uri": URI},
                       "position": {"line": 0, "character": 2 ** 31 + 7},
                       "context": {"triggerKind": 1}}, "position"),
        "no context": ({"textDocument": {"uri": URI}, "position": {"line": 0, "character": 0}},
                       "context"),
        "params null": (None, "params"),
    }
    for name, (params, field) in cases.items():
        error = _error(wire.call("textDocument/inlineCompletion", params))
        assert error["code"] == -32602, name
        assert field in error["message"], (name, error)


def test_custom_requests_without_params_are_answered(wire):
    stats = wire.call("inkling/stats")                  # no "params" member at all
    assert "result" in stats and stats["result"]["requests"] >= 0
    assert "result" in wire.call("inkling/lastCompletion")
    error = _error(wire.call("inkling/document"))
    assert error["code"] == -32602 and "params.uri" in error["message"]


def test_unknown_method_is_method_not_found(wire):
    assert _error(wire.call("inkling/noSuchThing", {}))["code"] == -32601


# 2. a malformed edit is refused whole, and named
@pytest.mark.parametrize("change, field", [
    ({"text": None}, "text"),
    ({"text": 42}, "text"),
    ({"range": {"start": {"line": 0.5, "character": 0}, "end": {"line": 0, "character": 0}},
      "text": "y"}, "line"),
])
def test_a_malformed_edit_is_refused_whole(wire, change, field):
    uri = f"file:///ws/malformed-{field}-{abs(hash(str(change)))}.py"
    wire.open(uri, "x = 1\n")
    good = {"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
            "text": "z"}
    before = len(wire.log_messages())
    wire.change(uri, 2, [good, change])                # one bad change refuses all of them
    assert wire.sha256(uri) == sha("x = 1\n")
    assert wire.wait_for(lambda: len(wire.log_messages()) > before, 10)
    said = wire.log_messages()[before:]
    assert any("refused" in m and field in m for m in said), said


def test_a_string_version_is_refused(wire):
    uri = "file:///ws/version.py"
    wire.open(uri, "a\n")
    wire.change(uri, "4", [{"text": "b\n"}])
    assert wire.sha256(uri) == sha("a\n")
    error = _error(wire.call("textDocument/inlineCompletion", {
        "textDocument": {"uri": uri}, "position": {"line": 0.5, "character": 0},
        "context": {"triggerKind": 1}}))
    assert error["code"] == -32602 and "line" in error["message"]


# 3. a lone surrogate is replaced by U+FFFD (one UTF-16 unit for one): the document stays usable
def test_a_lone_surrogate_does_not_poison_the_document(wire):
    uri = "file:///ws/surrogate.py"
    wire.open(uri, "s = ''\n")
    wire.change(uri, 2, [{"range": {"start": {"line": 0, "character": 5},
                                    "end": {"line": 0, "character": 5}}, "text": "\ud800"}])
    wire.change(uri, 3, [{"range": {"start": {"line": 0, "character": 7},
                                    "end": {"line": 0, "character": 7}}, "text": "  # ok"}])
    assert wire.sha256(uri) == sha("s = '\ufffd'  # ok\n")
    response = wire.wait(wire.inline(uri, 0, 13), 60)
    assert "result" in response, response


# 4. an automatic completion overtaken by edits: ContentModified, no traceback
def test_a_completion_overtaken_by_an_edit_is_content_modified_and_quiet(wire):
    uri = "file:///ws/overtaken.py"
    wire.open(uri, "def f():\n    return 1\n")
    msg_id = wire.inline(uri, 1, 12, kind=2)           # automatic: debounced on the server
    wire.change(uri, 2, [{"range": {"start": {"line": 1, "character": 4},
                                    "end": {"line": 1, "character": 12}}, "text": "pass"}])
    error = _error(wire.wait(msg_id, 30))
    assert error["code"] == -32801, error
    bad = _error(wire.wait(wire.inline(uri, 1, 40), 30))   # a bad position, no edit after it
    assert bad["code"] == -32602 and "past the end" in bad["message"]
    assert wire.tracebacks() == []


# 5. unreadable messages get the spec's answer with id null, and no popup
def test_unreadable_messages_are_answered_with_id_null_and_no_popup(wire):
    before = len(wire.null_id)
    wire.frame(b"{not json")
    wire.frame(b"[1, 2]")
    wire.frame(b'{"jsonrpc": "2.0", "id": {"x": 1}, "method": "inkling/stats"}')
    assert wire.wait_for(lambda: len(wire.null_id) >= before + 3, 10)
    codes = [m["error"]["code"] for m in wire.null_id[before:]]
    assert codes == [-32700, -32600, -32600]
    for _ in range(5):                                # bad params, many times: answered, no popup
        wire.call("textDocument/inlineCompletion", None)
    assert wire.popups() == []
    assert "result" in wire.call("inkling/stats", {})    # the stream is not wedged
    assert wire.tracebacks() == []


def test_popups_are_shown_once_a_minute_per_message():
    from inkling.lsp.notices import Notices
    shown, now = [], [0.0]
    notices = Notices(shown.append, interval_s=60, clock=lambda: now[0])
    for t in (0, 10, 59.9, 60, 61, 130):
        now[0] = t
        notices.show("a")
        notices.show("b" if t < 30 else "c")
    assert shown == ["a", "b", "c", "a", "a", "c"]


# 6. exit: within 0.5 s, 0 after shutdown, 1 without
def test_exit_after_shutdown_is_prompt_and_zero_even_under_load(tiny_model_dir):
    w = Wire(tiny_model_dir)
    try:
        w.open(URI, "def g(x):\n    return x\n" * 50)
        for i in range(5):
            w.inline(URI, 1, 12)
        code, seconds = w.close()
        assert code == 0 and seconds < 0.5, (code, seconds)
        assert w.unanswered() == [] and w.tracebacks() == []
    finally:
        w.kill()


def test_exit_without_shutdown_is_code_one(tiny_model_dir):
    w = Wire(tiny_model_dir)
    try:
        t0 = time.monotonic()
        w.notify("exit")
        assert w.proc.wait(10) == 1 and time.monotonic() - t0 < 0.5
    finally:
        w.kill()


def test_requests_after_shutdown_are_refused_not_dropped(tiny_model_dir):
    w = Wire(tiny_model_dir)
    try:
        assert "result" in w.call("shutdown")
        assert _error(w.call("inkling/stats", {}))["code"] == -32600
        w.notify("exit")
        assert w.proc.wait(10) == 0
    finally:
        w.kill()


# 8. expected errors are one line at info (issue 71): a cancel no request can match, a method
# not served here
@pytest.fixture(scope="module")
def info_wire(tiny_model_dir):
    """A server of its own logging at info, where each expected error is one line."""
    w = Wire(tiny_model_dir, log_level="info", ready=False)
    yield w
    w.kill()


def _lines_with(wire, needle: str, count: int) -> list[str]:
    wire.wait_for(lambda: sum(needle in line for line in wire.stderr) >= count, 10)
    return [line for line in wire.stderr if needle in line]


def test_a_cancel_whose_id_is_a_list_or_an_object_is_one_info_line(info_wire):
    for bad in ([1], {"id": 1}):
        info_wire.notify("$/cancelRequest", {"id": bad})
    assert "result" in info_wire.call("inkling/stats", {})      # it keeps serving
    lines = _lines_with(info_wire, "$/cancelRequest", 2)
    assert len(lines) == 2 and all(" INFO " in line for line in lines), lines
    assert '[1]' in lines[0] and '{"id": 1}' in lines[1]
    assert not [line for line in info_wire.stderr if "unhashable" in line]
    assert info_wire.popups() == []


def test_an_unknown_method_is_one_info_line(info_wire):
    assert _error(info_wire.call("inkling/noSuchThing", {}))["code"] == -32601
    info_wire.notify("inkling/noSuchNotice", {})            # a notification: ignored
    assert "result" in info_wire.call("inkling/stats", {})
    lines = _lines_with(info_wire, "noSuchThing", 1)
    assert len(lines) == 1 and " INFO " in lines[0], lines
    assert not [line for line in info_wire.stderr if "noSuchNotice" in line]
