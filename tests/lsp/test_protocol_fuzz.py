"""A seeded protocol fuzzer against the real server (a subprocess over stdio).

A hypothesis state machine plays an editor: it opens, edits (CRLF, astral characters,
combining marks, lone surrogates), completes, cancels, closes documents with requests in
flight and changes settings, and sends about one bad message in eight (wrong types,
positions out of range or splitting a surrogate pair, missing params, bad JSON). Its own
document model is addressed in UTF-16 code units, as LSP is. After every edit, valid or
refused, the server's copy (``inkling/document``) must equal the model's; at the end every
request has had exactly one answer, stderr holds no traceback, memory stayed bounded and
exit is clean.

The default suite runs a short fuzz; ``INKLING_FUZZ_LONG=1`` runs 3 seeds x 2,000 steps
and prints the figures (README, "Robustness").
"""
import hashlib
import os
import re
import time
from bisect import bisect_right

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

from lsp_wire import Wire

pytestmark = pytest.mark.slow
LONG = os.environ.get("INKLING_FUZZ_LONG") == "1"
LINE_BREAK = re.compile(r"\r\n|\r|\n")
PIECES = ["x", "y = ", "def f(a):", "    ", "return a", "(", ")", ".", "\n", "\r\n", "\t",
          "é", "e\u0301", "😀", "中文", "# note", "'s'", "1", " ", "\r"]
ALLOWED_ERRORS = {-32602, -32800, -32801}      # bad position, cancelled, content modified
RSS_LIMIT_MB = 1200
ACTIONS = (["edit"] * 12 + ["complete"] * 6 + ["cancel"] * 2 + ["open_document"] * 1 +
           ["close_document"] * 1 + ["configure"] * 1 + ["bad_edit"] * 2 +
           ["split_surrogate_pair"] * 1 + ["bad_request"] * 2)


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def utf16_len(s: str) -> int:
    return len(s) + sum(1 for c in s if ord(c) > 0xFFFF)


class Model:
    """The client's copy of one document, with LSP positions in UTF-16 code units."""

    def __init__(self, text: str):
        self.text, self.version = text, 1

    def starts(self) -> list[int]:
        return [0] + [m.end() for m in LINE_BREAK.finditer(self.text)]

    def position(self, offset: int):
        """(line, UTF-16 character) of a string offset, or None inside a \\r\\n."""
        starts = self.starts()
        line = bisect_right(starts, offset) - 1
        if 0 < offset < len(self.text) and self.text[offset - 1:offset + 1] == "\r\n":
            return None
        return {"line": line, "character": utf16_len(self.text[starts[line]:offset])}

    def line_end(self, line: int) -> int:
        starts = self.starts()
        end = starts[line + 1] if line + 1 < len(starts) else len(self.text)
        return utf16_len(self.text[starts[line]:end].rstrip("\r\n"))


class Fuzz(RuleBasedStateMachine):
    wire: Wire = None            # set by the test: one server for the whole run
    figures: dict = None

    def __init__(self):
        super().__init__()
        self.docs: dict[str, Model] = {}
        self.figures["runs"] = self.run = self.figures.get("runs", 0) + 1
        self.opened = 0
        self.in_flight: list = []     # ids not yet answered (checked by the invariant)
        self.sent: list = []          # every id sent, in order (what cancels draw from:
                                      # never the answers, so generation stays replayable)

    def _sent(self, msg_id) -> None:
        self.in_flight.append(msg_id)
        self.sent.append(msg_id)

    def _uri(self, data) -> str:
        return data.draw(st.sampled_from(sorted(self.docs)))

    def _check(self, uri: str) -> None:
        got = self.wire.sha256(uri, timeout=60)
        assert got == sha(self.docs[uri].text), f"desync on {uri}: {self.docs[uri].text!r}"
        self.figures["checks"] += 1

    def _step(self, kind: str) -> None:
        self.figures["steps"] += 1
        self.figures[kind] = self.figures.get(kind, 0) + 1

    # -------------------------------------------------------------- documents
    @rule(data=st.data())
    def act(self, data):
        """One editor action, drawn with the weights of ACTIONS (bad input about 1 in 8)."""
        if not self.docs:
            return self.open_document(data)
        name = data.draw(st.sampled_from(ACTIONS))
        if name == "open_document" and len(self.docs) >= 3:
            name = "edit"
        getattr(self, name)(data)

    def open_document(self, data):
        text = data.draw(st.lists(st.sampled_from(PIECES), max_size=40).map("".join))
        self._step("open")
        self.figures["opened"] += 1
        self.opened += 1               # named per machine: the draws never see the counter
        uri = f"file:///fuzz/run{self.run}/doc{self.opened:04d}.py"
        self.docs[uri] = Model(text)
        self.wire.open(uri, text)
        self._check(uri)

    def _valid_change(self, data, model: Model) -> dict:
        if data.draw(st.integers(0, 9)) == 0:                 # a whole-document change
            return {"text": data.draw(st.lists(st.sampled_from(PIECES), max_size=20)
                                      .map("".join))}
        n = len(model.text)
        while True:
            a = data.draw(st.integers(0, n))
            b = data.draw(st.integers(a, min(n, a + 8)))
            start, end = model.position(a), model.position(b)
            if start is not None and end is not None:
                break
        text = data.draw(st.lists(st.sampled_from(PIECES + ["\ud800"]), max_size=4)
                         .map("".join))
        return {"range": {"start": start, "end": end}, "text": text}

    @staticmethod
    def _apply(model: Model, change: dict) -> None:
        text = change["text"].replace("\ud800", "\ufffd")       # the server's documented rule
        if "range" not in change:
            model.text = text
            return
        starts = model.starts()

        def offset(p):
            line_start = starts[p["line"]]
            units, i = 0, line_start
            while units < p["character"]:
                units += 2 if ord(model.text[i]) > 0xFFFF else 1
                i += 1
            return i
        a, b = offset(change["range"]["start"]), offset(change["range"]["end"])
        model.text = model.text[:a] + text + model.text[b:]

    def edit(self, data):
        if not self.docs:
            return
        self._step("edit")
        uri = self._uri(data)
        model = self.docs[uri]
        changes = []
        for _ in range(data.draw(st.integers(1, 3))):
            change = self._valid_change(data, model)
            self._apply(model, change)                       # later changes see earlier ones
            changes.append(change)
        model.version += 1
        self.wire.change(uri, model.version, changes)
        if data.draw(st.booleans()):                        # a completion behind the burst
            self._complete(data, uri)
        self._check(uri)

    def bad_edit(self, data):
        """One bad change among good ones: the whole notification is refused."""
        if not self.docs:
            return
        self._step("bad_edit")
        uri = self._uri(data)
        model = self.docs[uri]
        line = model.position(len(model.text))["line"]
        end = model.line_end(line)
        bad = data.draw(st.sampled_from([
            {"text": None}, {"text": 42},
            {"range": {"start": {"line": 0.5, "character": 0},
                       "end": {"line": 0, "character": 0}}, "text": "q"},
            {"range": {"start": {"line": line + 5, "character": 0},
                       "end": {"line": line + 5, "character": 0}}, "text": "q"},
            {"range": {"start": {"line": line, "character": end + 3},
                       "end": {"line": line, "character": end + 3}}, "text": "q"},
            {"range": {"start": {"line": 0, "character": -1},
                       "end": {"line": 0, "character": 0}}, "text": "q"},
            {"range": {"start": {"line": line, "character": end},
                       "end": {"line": 0, "character": 0}}, "text": "q"} if line or end else
            {"text": None},
        ]))
        version = data.draw(st.sampled_from([model.version + 1, str(model.version + 1)]))
        changes = [self._valid_change(data, Model(model.text))] if data.draw(st.booleans()) \
            else []
        self.wire.change(uri, version, [bad] + changes)      # bad against the text as it is
        self._check(uri)                                    # nothing of it applied

    def split_surrogate_pair(self, data):
        if not self.docs:
            return
        uri = self._uri(data)
        model = self.docs[uri]
        i = next((i for i, c in enumerate(model.text) if ord(c) > 0xFFFF), None)
        if i is None:
            return
        self._step("bad_edit")
        p = model.position(i)
        inside = {"line": p["line"], "character": p["character"] + 1}
        self.wire.change(uri, model.version + 1, [{"range": {"start": inside, "end": inside},
                                                   "text": "z"}])
        self._check(uri)

    def close_document(self, data):
        if not self.docs:
            return
        self._step("close")
        uri = self._uri(data)
        if data.draw(st.booleans()):
            self._complete(data, uri)                       # a request in flight
        del self.docs[uri]
        self.wire.notify("textDocument/didClose", {"textDocument": {"uri": uri}})

    # ------------------------------------------------------------ completions
    def _complete(self, data, uri: str) -> None:
        model = self.docs[uri]
        p = None
        while p is None:
            p = model.position(data.draw(st.integers(0, len(model.text))))
        if data.draw(st.integers(0, 9)) == 0:
            p = {"line": p["line"], "character": model.line_end(p["line"]) + 2}   # stale
        kind = data.draw(st.sampled_from([1, 2, 2]))
        method = data.draw(st.sampled_from(["textDocument/inlineCompletion"] * 3 +
                                           ["textDocument/completion"]))
        params = {"textDocument": {"uri": uri}, "position": p}
        if method.endswith("inlineCompletion"):
            params["context"] = {"triggerKind": kind}
        self._sent(self.wire.request(method, params))
        self.figures["completions"] += 1

    def complete(self, data):
        if self.docs:
            self._step("complete")
            self._complete(data, self._uri(data))

    def cancel(self, data):
        if self.sent:
            self._step("cancel")
            msg_id = data.draw(st.sampled_from(self.sent[-4:]))
            self.wire.notify("$/cancelRequest", {"id": msg_id})

    def configure(self, data):
        self._step("configure")
        settings_ = data.draw(st.sampled_from([
            {"completion": {"maxNewTokens": 3}}, {"completion": {"maxNewTokens": 5}},
            {"completion": {"drafts": 2, "decoder": "branches"}},
            {"completion": {"decoder": "greedy"}},
            {"completion": {"maxNewTokens": "many"}},         # invalid: refused, one popup
        ]))
        self.wire.notify("workspace/didChangeConfiguration", {"settings": {"inkling": settings_}})

    # -------------------------------------------------------------- bad input
    def bad_request(self, data):
        self._step("bad_request")
        uri = self._uri(data) if self.docs else "file:///fuzz/none.py"
        kind = data.draw(st.integers(0, 9))
        w = self.wire
        if kind == 0:
            w.frame(b"{\"jsonrpc\": \"2.0\", \"id\": ")              # not JSON
            self.figures["null_id_expected"] += 1
        elif kind == 1:
            w.frame(b"[]")
            self.figures["null_id_expected"] += 1
        elif kind == 2:
            self._sent(w.request("inkling/stats"))        # no params member
        elif kind == 3:
            self._sent(w.request("inkling/lastCompletion"))
        elif kind == 4:
            self._sent(w.request("textDocument/inlineCompletion", None))
        elif kind == 5:
            self._sent(w.request("textDocument/inlineCompletion", {
                "textDocument": {"uri": uri}, "position": {"line": 0, "character": 0}}))
        elif kind == 6:
            self._sent(w.inline(uri, -1, 0))
        elif kind == 7:
            self._sent(w.inline(uri, 0, 2 ** 31 + 1))
        elif kind == 8:
            self._sent(w.request("inkling/nothing", {}))
        else:
            self._sent(w.request("inkling/document", {"uri": 7}))

    @invariant()
    def answers_are_expected(self):
        for msg_id in list(self.in_flight):
            responses = self.wire.responses.get(msg_id)
            if responses:
                self.in_flight.remove(msg_id)
                error = responses[0].get("error")
                assert error is None or error["code"] in ALLOWED_ERRORS | {-32601}, error


def _run(wire: Wire, seed_: int, examples: int, steps: int) -> dict:
    figures = {"steps": 0, "checks": 0, "completions": 0, "opened": 0, "null_id_expected": 0}
    machine = type(f"Fuzz{seed_}", (Fuzz,), {"wire": wire, "figures": figures})
    Fuzz.figures = figures
    hypothesis_seed(seed_)(machine)
    run_state_machine_as_test(machine, settings=settings(
        max_examples=examples, stateful_step_count=steps, deadline=None, database=None,
        suppress_health_check=list(HealthCheck),
        # no shrinking: each step talks to a live server, so shrinking takes many minutes;
        # the failing steps are printed as found
        phases=[Phase.explicit, Phase.reuse, Phase.generate]))
    return figures


def _finish(wire: Wire, figures: dict) -> dict:
    assert wire.wait_for(lambda: not wire.unanswered(), 120), \
        f"unanswered: {wire.unanswered()[:10]}"
    assert wire.answered_twice() == []
    assert len(wire.null_id) == figures["null_id_expected"]
    assert wire.tracebacks() == [], "".join(wire.stderr)[-3000:]
    stats = wire.call("inkling/stats", {})["result"]
    figures.update(rss_mb=round(wire.rss_mb()), requests=len(wire.sent),
                   answered_completions=stats["answered"], latency_ms=stats["latency_ms"],
                   popups=len(wire.popups()))
    assert figures["rss_mb"] < RSS_LIMIT_MB
    code, seconds = wire.close()
    figures.update(exit_code=code, exit_s=round(seconds, 3))
    assert code == 0 and seconds < 0.5
    return figures


def _wire(model_dir, options: dict | None = None) -> Wire:
    return Wire(model_dir, options)


def test_fuzz_short(tiny_model_dir):
    wire = _wire(tiny_model_dir, {"completion": {"maxNewTokens": 4, "maxBlockTokens": 8}})
    try:
        figures = _finish(wire, _run(wire, 1, examples=4, steps=40))
        print(f"\nfuzz (short): {figures}")
        assert figures["checks"] > 0 and figures["completions"] > 0
    finally:
        wire.kill()


@pytest.mark.skipif(not LONG, reason="the long fuzz runs with INKLING_FUZZ_LONG=1")
@pytest.mark.parametrize("seed_", [1, 2, 3])
def test_fuzz_long(bundled_model_dir, seed_):
    """2,000 steps or more per seed, on the bundled model with default settings (real
    completion latencies)."""
    wire = _wire(bundled_model_dir)
    t0 = time.monotonic()
    try:
        figures, round_ = None, 0
        while figures is None or figures["steps"] < 2000:
            more = _run(wire, seed_ * 1000 + round_, examples=10, steps=100)
            figures = more if figures is None else {
                k: figures.get(k, 0) + v for k, v in more.items()}
            round_ += 1
        figures = _finish(wire, figures)
        figures["minutes"] = round((time.monotonic() - t0) / 60, 1)
        print(f"\nfuzz seed {seed_}: {figures}")
    finally:
        wire.kill()
