"""The trigger sites' searches that start where the line's last run of name characters
does (``_run_start``) against the same searches over the whole line, the reference they
stand in for: for any line, the same match or none."""
from __future__ import annotations

import re

from hypothesis import example, given, settings
from hypothesis import strategies as st

from inkling.analysis import trigger_site as ts
from inkling.analysis.python_scanner import Frame, ScanState

# name characters (ASCII and beyond, the digits among them), dots, blanks, the characters
# a chain's look-behind names, and keywords whole
LINES = st.lists(st.sampled_from(list("aZ_9.( )]}'\"\t=é١") + ["ñ", "x.y", "import ",
                                                                 "from ", "self."]),
                 max_size=24).map("".join)
PATTERNS = {"_ATTRIBUTE": ts._CHAIN_CHARS, "_PENDING": ts._CHAIN_CHARS, "_TYPED": ts._WORD_CHARS}


def _span(m: re.Match | None):
    return None if m is None else (m.span(), m.groups())


@given(LINES)
@settings(max_examples=600, deadline=None)
@example("x = aé")           # a name that ends beyond ASCII: the whole line searched
@example("fé.b")
@example("ab")
def test_a_search_from_the_runs_start_finds_what_a_whole_search_finds(line):
    for name, chars in PATTERNS.items():
        pattern = getattr(ts, name)
        assert _span(pattern.search(line, ts._run_start(line, chars))) == \
            _span(pattern.search(line)), name


@given(LINES, st.booleans())
@settings(max_examples=300, deadline=None)
@example("  import os", False)
@example("from . import (a", False)
def test_the_statements_gate_leaves_every_statement_site(line, in_call):
    """Where the gate stops ``trigger_site`` before the statements' patterns, none of
    them matches."""
    if not ts._IMPORT_START.match(line):
        assert ts._statement_site(line) is None and not ts._FROM_IMPORT.match(line)
    scan = ScanState(line=line, frames=(Frame("(", callee="f"),) if in_call else ())
    ts.trigger_site(scan), ts.read_site(scan), ts.pending_chain(scan)   # none raises
