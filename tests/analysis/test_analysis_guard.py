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
    ('"""', ""),                    # a docstring opened, never an empty string ""
    ('"""Sum the items.', ""),
    ("total += len('')", "total += len('')"),
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


def test_a_replacement_field_in_an_f_string_is_code_not_string():
    """Inside ``{...}`` of an f-string the tree's string node holds code: a ``)`` there is
    an error, and neither the guard's no-parse rule nor the lexical one may wave it
    through."""
    from inkling.analysis.grammars import Grammars
    from inkling.analysis.open_string import open_string_at
    text, offset = _split("x = f'a{y|}b'\n")
    tree = Grammars().parser("python").parse(text.encode())
    guard = SyntaxGuard(text, offset, "python", tree=tree,
                        open_string=open_string_at(tree.root_node, text, offset))
    assert guard.open_string == ""
    assert not guard.inert(")")
    assert guard.longest_valid_prefix(" + 1)") == len(" + 1")


# a docstring being typed back (a retype trace of toolz's dicttoolz.py): its closing quotes
# are not there yet, and tree-sitter's recovery of the unterminated string moves with any
# text inserted in it, so a reparse finds a "new" error in a doctest's "..." and the guard
# trimmed it to nothing; the lexer reads the rest of the file the same after it
OPEN_DOCSTRING = '''def f(x):
    """ Doc.

    >>> f(1)
    Traceback (most recent call last):
        |
'''


def test_the_tree_alone_sees_an_error_in_text_typed_into_an_open_docstring():
    text, offset = _split(OPEN_DOCSTRING)
    assert SyntaxGuard(text, offset, "python").longest_valid_prefix("...") == 0


def test_text_inside_a_docstring_being_typed_is_kept_and_counted_valid(tmp_path):
    """The guard (through the analysis's lexical scan) and the replay's syntax_valid
    metric decide it by one rule: they agree, where the tree alone did not."""
    from analysis_helpers import analysis_for, open_at
    from inkling.evaluation.syntax_check import SyntaxChecker
    text, offset = _split(OPEN_DOCSTRING)
    a = analysis_for(tmp_path)
    path = tmp_path / "m.py"
    open_at(a, path, OPEN_DOCSTRING)
    guard, metric = a.guard(path.as_uri(), offset), SyntaxChecker()
    assert guard.open_string == '"""'
    for draft in ("...", "KeyError: y", "a line\n    and the next", "{x}"):
        assert guard.longest_valid_prefix(draft) == len(draft), draft
        assert metric.valid("python", text, offset, draft), draft
    assert not guard.inert('..."""')          # what could end the string is still parsed
    code = OPEN_DOCSTRING.replace('"""', "#")  # in code no string is open: parsed as before
    open_at(a, path, code)
    at = code.index("|")
    in_code = a.guard(path.as_uri(), at)
    assert in_code.open_string == ""
    assert in_code.longest_valid_prefix("x = (1,,") < len("x = (1,,")   # cut at the fault
    assert not metric.valid("python", code.replace("|", ""), at, "x = (1,")


@pytest.mark.parametrize("doc", INSIDE + [OPEN_DOCSTRING, PY,
                                          "s = '''a\nb|\n", "x = f'''{a|\n", "y = 1  # |\n"])
@pytest.mark.parametrize("draft", ["the sum of it", "a\nb", "it's", "a'''b", "a\\n", "{x}",
                                   "x = (1,", ") + 1", "..."])
def test_what_the_guard_keeps_the_metric_counts_valid_once_finished(tmp_path, doc, draft):
    """A kept draft is valid, or unfinished: valid with what closes the string and the
    brackets it opened (the metric, reading it as it is, counts an unfinished one
    invalid)."""
    from analysis_helpers import analysis_for, open_at
    from inkling.analysis.unfinished import closers
    from inkling.evaluation.syntax_check import SyntaxChecker
    text, offset = _split(doc)
    a = analysis_for(tmp_path)
    path = tmp_path / "m.py"
    open_at(a, path, doc)
    guard = a.guard(path.as_uri(), offset)
    kept = draft[:guard.longest_valid_prefix(draft)]
    finished = kept + closers(guard.scan, kept) if kept else kept
    assert SyntaxChecker().valid("python", text, offset, finished), (doc, draft, kept)


# drafts of a retype trace of the tuning set that the guard emptied or cut short, where
# the line merely went on: a docstring opened, a call opened, a doctest's quotes
@pytest.mark.parametrize("doc, draft, kept", [
    (PY, '"""Sum the items.', '"""Sum the items.'),
    (PY, '"""Sum the items.\n\n    >>> f([1])', '"""Sum the items.\n\n    >>> f([1])'),
    (PY, 'raise TypeError("', 'raise TypeError("'),
    (PY, "return codecs.CodecInfo(", "return codecs.CodecInfo("),
    (PY, "total += len(items", "total += len(items"),
    (PY, "total += len(items,, 2)", "total += len(items,"),     # cut at its first fault
    (PY, "x = [1, 2] ]", "x = [1, 2]"),
    (OPEN_DOCSTRING, "...     'a': 'Alice',", "...     'a': 'Alice',"),
])
def test_an_unfinished_draft_is_kept_and_cut_at_its_first_fault(tmp_path, doc, draft, kept):
    from analysis_helpers import analysis_for, open_at
    a = analysis_for(tmp_path)
    path = tmp_path / "m.py"
    open_at(a, path, doc)
    guard = a.guard(path.as_uri(), doc.index("|"))
    assert draft[:guard.longest_valid_prefix(draft)].rstrip() == kept


def test_without_the_cursors_scan_a_draft_is_judged_as_it_ends():
    text, offset = _split(PY)
    assert SyntaxGuard(text, offset, "python").longest_valid_prefix("x = [1, 2") == 1
