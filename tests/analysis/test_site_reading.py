"""The kept readings of a scanner state (``trigger_site.site_reading``) against the
functions they keep, the reference: for any text scanned, each reading is what its
function says of that very state, whether computed for it or kept from an earlier state
of the same line and frames."""
from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from inkling.analysis import trigger_site as ts
from inkling.analysis.python_scanner import Frame, ScanState

# pieces of code that reach every site: receivers and dots, imports, calls with keyword
# arguments, statements' first names, keywords before a read, strings and comments
PIECES = ["self", ".", "x", "os.path", "import ", "from ", " import ", "(", ")", ", ", "=",
          "key", "return ", "def ", "lambda ", "for ", " in ", "\n", "    ", "'", '"', "#",
          "[", "]", "{", "}", ":", " ", "é", "**", "cls.a ", "print"]
TEXTS = st.lists(st.sampled_from(PIECES), max_size=30)

FUNCTIONS = {"trigger": ts.trigger_site, "pending": ts.pending_chain, "read": ts.read_site,
             "target": ts.statement_target, "receiver": ts.statement_receiver}


def _states(pieces: list[str]) -> list[ScanState]:
    states, s = [], ScanState()
    for piece in pieces:
        s = s.advance(piece)
        states.append(s)
    return states


@given(TEXTS, TEXTS)
@settings(max_examples=300, deadline=None)
@example(["self", ".", "x"], ["    ", "self", ".", "x"])
@example(["print", "(", "key", "=", "x", ", "], ["f", "(", "key", "=", "x", ", "])
def test_every_reading_is_its_functions_of_the_state(first, second):
    ts.forget_readings()
    for scan in _states(first) + _states(second):        # the second's may be kept readings
        reading = ts.site_reading(scan)
        if not scan.in_code:
            assert reading is None
            assert all(f(scan) is None for f in FUNCTIONS.values())
            continue
        for name, function in FUNCTIONS.items():
            assert getattr(reading, name) == function(scan), (name, scan)


def test_a_reading_is_kept_for_the_same_line_and_frames_and_not_for_others():
    ts.forget_readings()
    a = ScanState().advance("x = f(a, ")
    b = ScanState().advance("y = 1\nx = f(a, ")            # another text, the same line
    assert a is not b and (a.line, a.frames) == (b.line, b.frames)
    assert ts.site_reading(a) is ts.site_reading(b)
    c = ScanState().advance("x = g(a, ")
    assert ts.site_reading(c) is not ts.site_reading(a)
    assert ts.site_reading(ScanState().advance("x = 'f(a, ")) is None     # in a string


def test_the_kept_readings_are_bounded(monkeypatch):
    ts.forget_readings()
    monkeypatch.setattr(ts, "READINGS_KEPT", 3)
    first = ts.site_reading(ScanState(line="a"))
    for line in ("b", "c"):
        ts.site_reading(ScanState(line=line))
    assert ts.site_reading(ScanState(line="a")) is first
    ts.site_reading(ScanState(line="d"))                    # full: all forgotten, then kept
    assert len(ts._READINGS) == 1
    assert ts.site_reading(ScanState(line="a")) is not first


def test_frames_that_differ_only_in_a_calls_argument_keep_apart():
    """``read_site`` reads every frame: two calls' states differ by their frames' fields."""
    ts.forget_readings()
    one = ScanState(line="f(x", frames=(Frame("(", callee="f", kind="call", arg="x"),))
    two = ScanState(line="f(x", frames=(Frame("(", callee="f", kind="call", arg="x",
                                              keyword_seen=True),))
    assert ts.site_reading(one) is not ts.site_reading(two)
