"""The syntax guard rejects what Python's compiler rejects in argument and parameter lists
(analysis/compile_rules.py), with the compiler itself as the reference: for each list with
a hole and each insertion, the guard accepts the insertion exactly when the file then
compiles."""
import itertools

import pytest

from inkling.analysis.compile_rules import rule_breaks
from inkling.analysis.grammars import Grammars
from inkling.analysis.syntax_guard import SyntaxGuard, longest_valid_prefix

HOLES = ["f(a=1, @)\n", "f(x, @)\n", "f(**kw, @)\n", "f(*args, @)\n", "f(\n    @\n    a=2,\n)\n",
         "class C(Base, @):\n    pass\n", "def g(a, @):\n    pass\n",
         "def g(a=1, @):\n    pass\n", "def g(a=1, *, c, @):\n    pass\n",
         "def g(*args, @):\n    pass\n", "h = lambda a=1, @: a\n", "def g(a, **kw@):\n    pass\n",
         "def g(a: int = 1, @):\n    pass\n", "codecs.CodecInfo(\n    name='x',\n    @\n"
         "    streamwriter=StreamWriter,\n)\n"]
INSERTIONS = ["a=3", "a=3,", "x,", ", *more", ", c", "b=3", "x", "*more", "**extra", "a", "b",
              "a: int", "b: int = 2",
              "streamwriter=StreamWriter,", "streamreader=StreamReader,", "metaclass=M"]


def _compiles(text: str) -> bool:
    try:
        compile(text, "<draft>", "exec")
    except SyntaxError:
        return False
    return True


@pytest.mark.parametrize("hole, insertion", list(itertools.product(HOLES, INSERTIONS)))
def test_the_guard_accepts_an_insertion_exactly_when_python_compiles_it(hole, insertion):
    text = hole.replace("@", "")
    assert _compiles(text)
    offset = hole.index("@")
    guard = SyntaxGuard(text, offset)
    new = text[:offset] + insertion + text[offset:]
    assert guard.valid(insertion) == _compiles(new), new


STATEMENT_HOLES = ["import os\n@\n", '"""Doc."""\n@\nimport os\n', "# c\n@\nx = 1\n",
                   "@\n", "from __future__ import division\n@\n",
                   '"""Doc."""\n# c\nfrom __future__ import division\n@\n',
                   'from __future__ import division\n"""Not the docstring."""\n@\n',
                   "def f():\n    x = 1\n    @\n"]


@pytest.mark.parametrize("hole, insertion", list(itertools.product(
    STATEMENT_HOLES, ["from __future__ import annotations", "import sys"])))
def test_a_future_import_is_accepted_exactly_where_python_compiles_it(hole, insertion):
    text, offset = hole.replace("@", ""), hole.index("@")
    assert _compiles(text)
    new = text[:offset] + insertion + text[offset:]
    assert SyntaxGuard(text, offset).valid(insertion) == _compiles(new), new


def test_a_break_the_file_already_has_is_not_the_drafts():
    text = "f(a=1, b, a=2)\nx = \n"
    assert longest_valid_prefix(text, len(text) - 1, "1") == 1
    assert longest_valid_prefix(text, text.index(")"), ", b=3") == len(", b=3")


def test_a_repeated_keyword_is_cut_where_it_starts():
    text = "f(\n    a=1,\n    \n)\n"
    offset = text.index("\n    \n") + 5
    assert longest_valid_prefix(text, offset, "a=2,") == 0
    assert longest_valid_prefix(text, offset, "b=2,") == len("b=2,")


def test_only_the_lists_around_the_range_are_read():
    text = b"f(a=1, a=2)\ng(b=1, b=2)\n"
    root = Grammars().parser("python").parse(text).root_node
    assert [w for w, _ in rule_breaks(root, 0, 5)] == ["keyword argument repeated: a"]
    assert sorted(at for _, at in rule_breaks(root, 0, len(text))) == [text.index(b"a=2"),
                                                                        text.index(b"b=2")]


def test_other_languages_are_left_to_their_parser():
    text = "f(a=1, )\n"          # a JavaScript assignment expression, not a keyword argument
    assert SyntaxGuard(text, text.index(")"), "javascript").valid("a=2") is not False
