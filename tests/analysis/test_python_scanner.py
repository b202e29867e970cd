"""The scanner's own ``replace`` against ``dataclasses.replace``, the reference it stands in
for: advancing any text gives equal states either way."""
from __future__ import annotations

import dataclasses

from hypothesis import given, settings
from hypothesis import strategies as st

from inkling.analysis import python_scanner
from inkling.analysis.python_scanner import Frame, ScanState

# characters that move the scanner (quotes, brackets, escapes, comments, line ends) and
# plain ones, so that every branch of ``_step`` is reached
PIECES = st.lists(st.sampled_from(list("\"'#\n()[]{},\\=: rbf") + ["foo", "x.y", "def f",
                                                                    "from m import ", "k="]),
                  max_size=60).map("".join)


@given(PIECES, st.integers(0, 60))
@settings(max_examples=300, deadline=None)
def test_fast_replace_gives_the_states_dataclasses_replace_gives(text, cut):
    fast = ScanState().advance(text[:cut]).advance(text[cut:])
    original = python_scanner.replace
    python_scanner.replace = dataclasses.replace
    try:
        reference = ScanState().advance(text[:cut]).advance(text[cut:])
    finally:
        python_scanner.replace = original
    assert fast == reference
    assert hash(fast) == hash(reference)


def test_replace_leaves_the_original_and_keeps_the_type():
    s = ScanState(line="a", frames=(Frame("("),))
    t = python_scanner.replace(s, line="ab")
    assert (s.line, t.line, t.frames, type(t)) == ("a", "ab", s.frames, ScanState)
    f = python_scanner.replace(Frame("(", callee="g"), commas=2)
    assert f == Frame("(", callee="g", commas=2)
