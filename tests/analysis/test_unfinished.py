"""What a draft leaves open, closed: the syntax guard judges a draft with it after."""
from __future__ import annotations

import pytest

from inkling.analysis.python_scanner import ScanState
from inkling.analysis.unfinished import closers


@pytest.mark.parametrize("before, draft, ending", [
    ("", "total += len(items", ")"),
    ("", 'foo("abc', '")'),
    ("", '"""Sum the items.', '"""'),
    ("", "a = {1: (2", ")}"),
    ("", "f(a)[0]", ""),
    ("", 'x = "', '"'),
    ("", 'x = "\\', '_"'),                      # an escape takes a character first
    ("foo(a, ", "b), g(c", ")"),               # the cursor's bracket is the document's
    ("foo(a, ", "b", ""),
    ('x = """abc\n', "more text", ""),          # still in the cursor's string
    ('x = """abc\n', 'end""" + f(', ")"),
    ("", "x = 1  # (a", ""),                     # a comment closes nothing
])
def test_closers(before, draft, ending):
    assert closers(ScanState().advance(before), draft) == ending
