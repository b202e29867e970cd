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
