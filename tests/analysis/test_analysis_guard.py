"""Syntax guard and stop rules, as pure functions over text."""
from __future__ import annotations

import pytest

from inkling.analysis import block_end, longest_valid_prefix, statement_end
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


@pytest.mark.parametrize("draft,expected", [
    ("x = 1\ny = 2\n", 5),
    ("x = f(1,\n      2)\ny = 3", 17),
    ("x = '''a\nb'''\nz", 13),
    ("x = 1 + \\\n    2\nq", 15),
    ("s = 'a#b'  # (\nq", 14),
    ('s = ""\nq', 6),
    ("x = (1,\n", None),
    ("x = 1", None),
])
def test_statement_end_python(draft, expected):
    text, offset = _split(PY)
    assert statement_end(text, offset, draft) == expected


def test_statement_end_continues_a_multi_line_call_at_the_cursor():
    text, offset = _split("x = foo(1,\n        |\n")
    draft = "2)\ny = 1\n"
    assert statement_end(text, offset, draft) == 2


def test_statement_end_javascript_waits_for_a_complete_statement():
    text, offset = _split("function f(a) {\n  |\n}\n")
    draft = "const x = a +\n    1;\n  return x;\n"
    assert statement_end(text, offset, draft, "javascript") == len("const x = a +\n    1;")


@pytest.mark.parametrize("draft,expected", [
    ("\n    return 1\n\ndef g():\n", "\n    return 1"),
    ("\n    x = '''\nnot a dedent\n'''\n    return x\nq = 1", "\n    x = '''\nnot a dedent\n'''\n"
     "    return x"),
    ("\n    if x:\n        y = 1\n    return y\nelse:\n",
     "\n    if x:\n        y = 1\n    return y"),
])
def test_block_end_python(draft, expected):
    text, offset = _split("def f(x):|\n")
    cut = block_end(text, offset, draft)
    assert draft[:cut] == expected


def test_block_end_waits_until_the_dedent_or_the_end():
    text, offset = _split("def f(x):|\n")
    assert block_end(text, offset, "\n    return 1\n") is None
    assert block_end(text, offset, "\n    return 1\n\n", final=True) == len("\n    return 1")


def test_block_end_braces():
    text, offset = _split("function f(a) {|\n")
    draft = "\n  if (a) {\n    return 1;\n  }\n  return 2;\n}\nfunction g() {"
    cut = block_end(text, offset, draft, "javascript")
    assert draft[:cut] == "\n  if (a) {\n    return 1;\n  }\n  return 2;"


def test_guard_without_grammar_keeps_the_draft():
    g = SyntaxGuard("x", 1, "cobol")
    assert g.longest_valid_prefix("anything (") == len("anything (")
    assert g.valid("x") is None


def test_guard_checks_are_bounded():
    text, offset = _split(PY)
    draft = "x = (" + "a + " * 200
    g = SyntaxGuard(text, offset, "python", max_checks=8)
    assert g.longest_valid_prefix(draft) <= len(draft)
