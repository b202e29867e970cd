"""The syntax guard: the longest prefix of a draft that adds no error node."""
from __future__ import annotations

import pytest

from inkling.analysis import longest_valid_prefix
from inkling.analysis.syntax_guard import SyntaxGuard

PY = "import os\n\n\ndef f(items):\n    total = 0\n    |\n    return total\n"


def _split(text: str) -> tuple[str, int]:
    return text.replace("|", ""), text.index("|")


@pytest.mark.parametrize("draft,expected", [
    ("for x in items:", "for x in items:"),
    ("total += len(items)", "total += len(items)"),
    ("total += len(items", "total += len"),
    ("print(os.path.join(a, b", "print"),
    ("x = [1, 2", "x"),
    ("total = 1\n    y = (", "total = 1\n    y"),
    ("", ""),
])
def test_longest_valid_prefix_python(draft, expected):
    text, offset = _split(PY)
    cut = longest_valid_prefix(text, offset, draft)
    assert draft[:cut].rstrip() == expected.rstrip()


def test_an_already_broken_document_does_not_count_against_the_draft():
    text, offset = _split("def f(:\n    |\n")
    assert longest_valid_prefix(text, offset, "return 1") == len("return 1")


@pytest.mark.parametrize("language,doc,draft,expected", [
    ("javascript", "function f(a) {\n  |\n}\n", "return g(a, [1, 2", "return g"),
    ("javascript", "function f(a) {\n  |\n}\n", "return a + 1;", "return a + 1;"),
    ("go", "package m\n\nfunc f(a int) int {\n\t|\n}\n", "return g(a, 2", "return g"),
    ("rust", "fn f(a: i32) -> i32 {\n    |\n}\n", "let b = vec![1, 2", ""),
    ("rust", "fn f(a: i32) -> i32 {\n    |\n}\n", "let b = a + 1;", "let b = a + 1;"),
    ("java", "class A {\n  int f(int a) {\n    |\n  }\n}\n", "return a * (2 + a);",
     "return a * (2 + a);"),
    ("typescript", "function f(a: number) {\n  |\n}\n", "const b: number = (a", "const b: number"),
])
def test_longest_valid_prefix_other_languages(language, doc, draft, expected):
    text, offset = _split(doc)
    cut = longest_valid_prefix(text, offset, draft, language)
    assert draft[:cut].rstrip() == expected.rstrip()


def test_guard_without_grammar_keeps_the_draft():
    g = SyntaxGuard("x", 1, "cobol")
    assert g.longest_valid_prefix("anything (") == len("anything (")
    assert g.valid("x") is None


def test_guard_checks_are_bounded():
    text, offset = _split(PY)
    draft = "x = (" + "a + " * 200
    g = SyntaxGuard(text, offset, "python", max_checks=8)
    assert g.longest_valid_prefix(draft) <= len(draft)


INSIDE = [
    'def f():\n    """Return |the total.\n    """\n    return 1\n',
    "x = 'a|b'\n",
    "x = f'a|b{y}'\n",
    "y = 1  # a note|\nz = 2\n",
    "y = 1  # a| note\n",
    'def f(:\n    s = """unclosed |\n',           # a broken document: parsed, not assumed
    "s = '|\n",                                   # an unterminated string
    'x = """|"""\n',
]


@pytest.mark.parametrize("doc", INSIDE)
@pytest.mark.parametrize("draft", ["the sum of it", "a\nb", "it's", 'say "hi"', "a\\n",
                                   "{x}", "*/ x", "", "   ", "x = (1,"])
def test_a_draft_taken_without_a_parse_is_one_the_parse_finds_valid(doc, draft):
    """``inert`` (no parse) only where the reference check, a reparse, finds no new
    error: inside a string or line comment, for text the lexer keeps inside it."""
    from inkling.analysis.grammars import Grammars
    text, offset = _split(doc)
    tree = Grammars().parser("python").parse(text.encode())
    guard = SyntaxGuard(text, offset, "python", tree=tree)
    reference = SyntaxGuard(text, offset, "python")
    if guard.inert(draft):
        assert reference.valid(draft), (doc, draft)
    assert guard.longest_valid_prefix(draft) == reference.longest_valid_prefix(draft)


def test_plain_text_in_a_docstring_or_comment_needs_no_parse():
    from inkling.analysis.grammars import Grammars
    parser = Grammars().parser("python")
    for doc, draft, inert in [(INSIDE[0], "the sum\n    of it", True), (INSIDE[1], "cd", True),
                              (INSIDE[1], "c\nd", False), (INSIDE[3], " more", True),
                              (INSIDE[2], "{z}", False), (INSIDE[5], "text", False),
                              (INSIDE[6], "text", False), (PY, "x = 1", False)]:
        text, offset = _split(doc)
        guard = SyntaxGuard(text, offset, "python", tree=parser.parse(text.encode()))
        assert guard.inert(draft) is inert, (doc, draft)
