"""The syntax guard's window: the cursor's statement, the next and their classes' headers,
parsed instead of the whole document, with the same verdict as the whole document's
check (``SyntaxGuard.document_checker``, the reference) wherever it is used."""
from __future__ import annotations

import inspect
import textwrap

import pytest

from inkling.analysis.grammars import Grammars
from inkling.analysis.parse_window import statement_window
from inkling.analysis.syntax_guard import SyntaxGuard
from inkling.analysis.text_edit import byte_offset

PARSER = Grammars().parser("python")

CLASS_DOC = textwrap.dedent('''\
    import os


    class Shape:
        """A shape."""
        sides = 0

        def area(self):
            return 0

        def name(self):
            return type(self).__name__

        def describe(self):
            return f"{self.name()} of {self.sides} sides"


    def main():
        print(Shape().describe())
    ''')


def _window(text: str, offset: int):
    tree = PARSER.parse(text.encode())
    return statement_window(tree.root_node, text.encode(), byte_offset(text, offset))


def test_inside_a_method_the_window_is_that_method_and_the_next_under_the_class_header():
    at = CLASS_DOC.index("return type(self)") + len("return type(self)")
    w = _window(CLASS_DOC, at)
    assert w.text == "class Shape:\n" + CLASS_DOC[CLASS_DOC.index("    def name"):
                                                   CLASS_DOC.index("\n\n\ndef main") + 1]
    assert w.text[:w.offset].endswith("return type(self)")
    assert w.text[w.offset:].startswith(".__name__")
    assert not PARSER.parse(w.text.encode()).root_node.has_error


def test_at_module_level_the_window_is_the_statement_and_the_next():
    at = CLASS_DOC.index("print(") + len("print(")
    w = _window(CLASS_DOC, at)
    assert w.text == CLASS_DOC[CLASS_DOC.index("def main"):]
    assert w.text[:w.offset].endswith("    print(")


def test_no_window_where_a_statement_outside_it_has_an_error():
    broken = CLASS_DOC.replace("return 0", "return 0 +")
    at = broken.index("print(") + len("print(")
    assert PARSER.parse(broken.encode()).root_node.has_error
    assert _window(broken, at) is None
    at = broken.index("return 0 +") + len("return 0 +")          # the error is inside it
    assert _window(broken, at) is not None


def test_a_future_import_is_judged_in_the_whole_document():
    """In the window (a string statement, as a docstring is) the import would be at the
    file's start; in the document an import comes before it, so Python rejects it."""
    text = "import os\n'settings'\n"
    guard = SyntaxGuard(text, len(text), "python", tree=PARSER.parse(text.encode()))
    draft = "from __future__ import annotations"
    assert guard.window is not None
    assert not guard.checker.introduces_error(draft)          # what the window alone says
    assert guard.valid(draft) is False
    assert guard.longest_valid_prefix(draft + "\n") == 0


# drafts as the guard checks them: a string a draft leaves open is closed after it
# (``unfinished.closers``), so none is left open here
DRAFTS = ["x = 1", "return self", "foo(a, b", "foo(a, b)", "]", ")", "if x:", "else:",
          "\n    return 1", "\n\ndef g():\n    pass", "\n\nclass C:\n    x = 1", "\n@property",
          '"""doc"""', "'a' + 'b'", "lambda: (", "f(a=1, a=2)", "def h(a=1, b):", ", b=2)",
          "\n        y = 2\n    z = 3", "\nx = 1", ": int = 0", ".append(1)", "# note", "\\"]


def _sources() -> list[str]:
    import argparse
    import dataclasses
    import fractions
    import textwrap as tw
    texts = [inspect.getsource(m) for m in (fractions, tw, dataclasses, argparse)]
    texts.append(CLASS_DOC)
    broken = inspect.getsource(fractions)
    cut = broken.index("def limit_denominator")
    texts.append(broken[:cut + 200] + broken[cut + 230:])     # a document being typed
    return texts


def _cursors(text: str, count: int) -> list[int]:
    """Line ends, mid-line points and blank lines' indentation spread over ``text``."""
    ends = [i for i, ch in enumerate(text) if ch == "\n"]
    step = max(1, len(ends) // count)
    out = []
    for k, end in enumerate(ends[::step]):
        start = text.rfind("\n", 0, end) + 1
        out.append(end if k % 3 else start + (end - start) // 2)
    return out


@pytest.mark.parametrize("source", range(6))
def test_the_window_agrees_with_the_whole_document(source):
    text = _sources()[source]
    tree = PARSER.parse(text.encode())
    in_window = differ = 0
    for at in _cursors(text, 30):
        guard = SyntaxGuard(text, at, "python", tree=tree)
        if guard.window is None:
            continue
        assert len(guard.window.text) < len(text)
        for draft in DRAFTS:
            in_window += guard.window.keeps(draft)
            valid = guard.valid(draft)
            if valid != (not guard.document_checker.introduces_error(draft)):
                differ += 1          # tree-sitter's recovery read the two differently:
                assert valid == _compiles(text[:at] + draft + text[at:]), (at, draft)
    assert in_window >= 20 * len(DRAFTS) // 2 and differ <= 2


def _compiles(text: str) -> bool:
    """Python's verdict (where the document compiled before the draft)."""
    try:
        compile(text, "<draft>", "exec", dont_inherit=True)
        return True
    except SyntaxError:
        return False


def test_a_draft_that_leaves_the_windows_block_is_judged_in_the_whole_document():
    at = CLASS_DOC.index("return 0") + len("return 0")
    guard = SyntaxGuard(CLASS_DOC, at, "python", tree=PARSER.parse(CLASS_DOC.encode()))
    assert guard.window.indent == 4
    assert guard.window.keeps("\n        x = 1\n    def g(self):")
    assert not guard.window.keeps("\nx = 1")
    blank = CLASS_DOC.index("\n\n    def name") + 1                 # col 0 of a blank line
    guard = SyntaxGuard(CLASS_DOC, blank, "python", tree=PARSER.parse(CLASS_DOC.encode()))
    assert not guard.window.keeps("x = 1") and guard.window.keeps("    x = 1")
