"""Alternative drafts worth showing (completion/draft_ranking.worth_showing): no blank,
repeated, whitespace-only, sub-word or strict-prefix alternatives, each one left out with
its reason, and a sentence saying why fewer than k drafts came back (Completion.shortfall,
`shortfall` and `dropped` in inkling/lastCompletion)."""
from __future__ import annotations

import re

import pytest

from inkling.completion.document import Position
from inkling.completion.decoding.ranking import (DUPLICATE, EMPTY, PREFIX, SHORT, WHITESPACE,
                                              Dropped, shortfall, worth_showing)
from inkling.completion.engine import Engine
from inkling.completion.options import InklingOptions


def test_each_kind_of_fragment_is_left_out_with_its_reason():
    texts = ["foo(a, b)", "foo", "  foo(a,  b)", "x", "", "bar(b)", "foo(a, b)  ", " #"]
    kept, dropped = worth_showing(texts)
    assert kept == [0, 5]
    assert dropped == [Dropped(1, "foo", PREFIX, 0), Dropped(2, "  foo(a,  b)", WHITESPACE, 0),
                       Dropped(3, "x", SHORT), Dropped(4, "", EMPTY),
                       Dropped(6, "foo(a, b)  ", DUPLICATE, 0), Dropped(7, " #", SHORT)]


def test_the_issues_fragments():
    """`   if` under `if x:` (whitespace aside, a prefix) and ` #` (shorter than a word)."""
    kept, dropped = worth_showing(["if x:", "   if", " #"])
    assert kept == [0]
    assert [(d.text, d.reason) for d in dropped] == [("   if", PREFIX), (" #", SHORT)]


def test_the_lead_is_kept_and_a_lone_draft_always():
    assert worth_showing(["x"]) == ([0], [])           # one draft: the answer, however short
    assert worth_showing([""]) == ([0], [])
    assert worth_showing(["a", "abc"]) == ([0, 1], [])  # the lead stays, even as a prefix
    kept, dropped = worth_showing(["  ", "return a", "return b"])
    assert kept == [1, 2] and dropped == [Dropped(0, "  ", EMPTY)]
    # a prefix of an alternative that is itself left out is still a prefix of something
    kept, dropped = worth_showing(["value = 1", "val", "value  = 1 "])
    assert kept == [0] and {d.reason for d in dropped} == {PREFIX, WHITESPACE}


def test_shortfall_says_why_fewer_than_k():
    assert shortfall(1, 1, 1, [], "greedy") == ""
    assert shortfall(3, 3, 3, [], "branches") == ""
    assert "greedy decoder gives one draft" in shortfall(3, 1, 1, [], "greedy")
    note = shortfall(3, 2, 1, [Dropped(1, " #", SHORT)], "branches")
    assert note.startswith("1 of 3 drafts shown")
    assert "found 2 distinct drafts" in note and "1 shorter than a word" in note
    assert shortfall(3, 3, 2, [Dropped(2, "ab", PREFIX, 0)], "superposed") == \
        "2 of 3 drafts shown: left out: 1 strict prefix of another draft"


SAMPLE = '''import os


def read_lines(path):
    """The lines of a text file, without line ends."""
    with open(path) as handle:
        return handle.read().splitlines()


def count_words(text):
    words = text.split()
    total = 0
    for word in words:
        if word.isalpha():
            total += 1
    return total


class Stack:
    def __init__(self):
        self.items = []

    def push(self, item):
        self.items.append(item)
'''


def _bare(text: str) -> str:
    return re.sub(r"\s+", "", text)


@pytest.mark.slow
def test_the_bundled_model_shows_only_alternatives_worth_showing(bundled_model_dir):
    """Invoked requests for 3 drafts at every line start and mid-line of a sample: no
    alternative is blank, sub-word, a whitespace variant or a prefix of another; whenever
    fewer than 3 come back, the completion says why; and some were left out."""
    engine = Engine(InklingOptions().merged(
        {"model": {"path": str(bundled_model_dir)},
         "completion": {"decoder": "branches", "drafts": 3, "maxNewTokens": 16}}))
    engine.open("file:///w/sample.py", SAMPLE)
    lines = SAMPLE.split("\n")
    reasons = set()
    for row, line in enumerate(lines):
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        for col in (indent, indent + len(line.strip()) // 2):
            result = engine.complete("file:///w/sample.py", Position(row, col), k=3,
                                     trigger="invoked")
            texts = [d.text for d in result.drafts]
            for i, text in enumerate(texts[1:], 1):
                bare = _bare(text)
                assert len(bare) >= 2, (row, col, texts)
                for j, other in enumerate(texts):
                    if j != i:
                        assert bare != _bare(other), (row, col, texts)
                        assert not (_bare(other).startswith(bare) and
                                    len(_bare(other)) > len(bare)), (row, col, texts)
            assert result.asked == 3
            assert (len(texts) < 3) == bool(result.shortfall), (texts, result.shortfall)
            assert len(result.drafts) + len(result.dropped) <= 3
            reasons |= {d.reason for d in result.dropped}
    assert reasons & {PREFIX, WHITESPACE, SHORT}, reasons


# the syntax guard on a shown draft (completion/presentation.guarded): it shortens a draft
# at its first fault, and never to nothing (drafts of the tuning set's traces it emptied:
# ``= self.read(n)`` after ``data``, ``cancel_callback,`` in a call the document breaks)
GUARDED = "def f(items):\n    total = 0\n    |\n    return total\n"


@pytest.mark.parametrize("draft, shown", [
    ("total += 1", "total += 1"),
    ("total += 1 +* 2", "total += 1"),
    (") + 1", ") + 1"),                          # every prefix faulted: shown as decoded
    ("= self.read(n)", "= self.read(n)"),
    ("", ""),
])
def test_the_guard_shortens_a_draft_and_never_empties_it(draft, shown):
    from inkling.analysis.syntax_guard import SyntaxGuard
    from inkling.completion.presentation import guarded
    text, at = GUARDED.replace("|", ""), GUARDED.index("|")
    assert guarded(draft, SyntaxGuard(text, at, "python")).rstrip() == shown
    assert guarded(draft, None) == draft
