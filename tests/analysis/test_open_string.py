"""Which string the lexer is inside at a cursor, and what text stays in it."""
from __future__ import annotations

import pytest

from inkling.analysis.grammars import Grammars
from inkling.analysis.open_string import open_string_at
from inkling.analysis.syntax_errors import stays_in_string


@pytest.mark.parametrize("doc,quote", [
    ("x = 'a|b'\n", "'"),
    ('x = "|"\n', '"'),
    ("x = r'a\\|'\n", "'"),
    ('def f():\n    """Doc |\n    more\n', '"""'),      # a docstring being typed
    ("def f():\n    '''Doc.\n\n    >>> f(1)\n    |\n", "'''"),
    ("x = f'a|{b}'\n", ""),                              # f-strings: braces hold code
    ("x = f'''{a|\n", ""),
    ("x = 1  # it's |\n", ""),                           # a comment
    ("x = (1, |\n", ""),
    ("x = 'a'|\n", ""),
    ("x = ''|\n", ""),
])
def test_open_string_at(doc, quote):
    text, offset = doc.replace("|", ""), doc.index("|")
    root = Grammars().parser("python").parse(text.encode()).root_node
    assert open_string_at(root, text, offset) == quote


def test_open_string_needs_a_scanner_for_the_language():
    text = "s = 'a"
    root = Grammars().parser("javascript").parse(text.encode()).root_node
    assert open_string_at(root, text, len(text), "javascript") == ""


@pytest.mark.parametrize("quote,insertion,stays", [
    ('"""', "text\n    more", True),
    ("'", "text more {x}", True),
    ("'", "text\nmore", False),                          # a one-line string ends at \n
    ('"""', 'say "hi"', False),
    ("'", "it's", False),
    ("'", "a\\n", False),
    ('"""', "a\rb", False),
    ("", "text", False),                                 # not in a string
    ("'", "", True),
])
def test_stays_in_string(quote, insertion, stays):
    assert stays_in_string(quote, insertion) is stays
