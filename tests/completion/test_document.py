import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inkling.completion.document import Document, Position, Range, TextChange, utf16_len
from inkling.completion.errors import DocumentError


def rng(a, b, c, d):
    return Range(Position(a, b), Position(c, d))


def test_utf16_positions_count_surrogate_pairs():
    doc = Document("file:///x.py", "s = '😀é'\nx\n")
    # 😀 is two UTF-16 units: the quote after it is at unit 7, the é at 7 too (after 😀)
    assert doc.offset_at(Position(0, 5)) == 5          # the 😀
    assert doc.offset_at(Position(0, 7)) == 6          # é, one code point after 😀
    with pytest.raises(DocumentError, match="surrogate"):
        doc.offset_at(Position(0, 6))
    assert doc.position_at(doc.offset_at(Position(0, 8))) == Position(0, 8)


def test_crlf_lines_and_changes():
    doc = Document("file:///w.py", "a = 1\r\nb = 2\r\n")
    assert doc.line_count == 3 and doc.line_text(1) == "b = 2" and doc.eol == "\r\n"
    doc.apply([TextChange("x", rng(1, 0, 1, 1))])
    assert doc.text == "a = 1\r\nx = 2\r\n"


def test_invalid_change_leaves_document_unchanged():
    doc = Document("file:///v.py", "one\ntwo\n")
    with pytest.raises(DocumentError, match="line 7 is out of range"):
        doc.apply([TextChange("A", rng(0, 0, 0, 0)), TextChange("B", rng(7, 0, 7, 0))])
    assert doc.text == "one\ntwo\n"
    with pytest.raises(DocumentError, match="past the end"):
        doc.apply([TextChange("B", rng(0, 9, 0, 9))])
    with pytest.raises(DocumentError, match="before its start"):
        doc.apply([TextChange("B", rng(1, 2, 0, 0))])
    assert doc.text == "one\ntwo\n"


def test_full_replacement_and_version():
    doc = Document("file:///u.py", "old")
    doc.apply([TextChange("new\ntext")], version=5)
    assert doc.text == "new\ntext" and doc.version == 5 and doc.line_count == 2


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="ab\n😀é\r", max_size=30), st.data())
def test_edits_match_string_splicing(text, data):
    doc = Document("file:///h.py", text)
    a = data.draw(st.integers(0, len(text)))
    b = data.draw(st.integers(a, len(text)))
    new = data.draw(st.text(alphabet="xy\n😀", max_size=5))
    # skip offsets that fall inside a \r\n pair: LSP cannot address them
    if any(0 < o < len(text) and text[o - 1] == "\r" and text[o] == "\n" for o in (a, b)):
        return
    start, end = doc.position_at(a), doc.position_at(b)
    assert doc.offset_at(start) == a and doc.offset_at(end) == b
    doc.apply([TextChange(new, Range(start, end))])
    assert doc.text == text[:a] + new + text[b:]


def test_utf16_len():
    assert utf16_len("a😀b") == 4 and utf16_len("abc") == 3
