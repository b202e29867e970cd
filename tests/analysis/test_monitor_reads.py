"""The monitor's free-name reads (``return |`` may name only a bound name) and new
attributes at a statement's start (``self.x`` that is no member must be assigned): where
they trigger, and the masks against a brute-force reference over a small vocabulary."""
from __future__ import annotations

from pathlib import Path

import pytest

from inkling.analysis.python_scanner import ScanState
from inkling.analysis.token_masks import MaskCache
from inkling.analysis.trigger_site import read_site
from inkling.analysis.vocabulary import TokenVocabulary

from analysis_helpers import analysis_for, open_at

MODULE = '''import os

LIMIT = 3


def total(items, start=0):
    result = start
    for item in items:
        result += item
    return result


class Box:
    def __init__(self, size):
        self.size = size

    def grow(self, by):
        |
'''

TEXTS = ["x", " x", "result", " result", "res", " res", "ult", " ult", "item", " item",
         "missing", " missing", "miss", " miss", "ing", "(", " (", ")", ",", ":", " =", "=",
         "==", " ==", "0", " 0", "\n", "\n    ", " ", "  ", "size", ".size", ".wide",
         ".wide =", "wide", " wide", "wide =", "wide(", "LIMIT", " LIMIT", "os", " os",
         "print", " print", "None", " None", "not", " not", "f", '"', "missing(", " missing("]


def _scan(text: str) -> ScanState:
    return ScanState().advance(text)


@pytest.mark.parametrize("text,typed,keyword_arg", [
    ("    return ", "", False),
    ("    return res", "res", False),
    ("    x = ", "", False),
    ("    x = a + ", "", False),
    ("    if not ", "", False),
    ("    for item in ", "", False),
    ("    x = f(", "", True),
    ("    x = f(a, ", "", True),
    ("    x = f(a=", "", False),
    ("    x = d[", "", False),
    ("    x = [a, ", "", False),
    ("    a, b = c, ", "", False),
])
def test_reads_are_found(text, typed, keyword_arg):
    site = read_site(_scan(text))
    assert site is not None and site.typed == typed and site.keyword_arg == keyword_arg
    assert not site.after_keyword


@pytest.mark.parametrize("text", [
    "    ",                        # a statement's start: maybe an assignment target
    "    res",
    "    a, ",                     # a target list, maybe
    "    for ",                    # bindings
    "    for x, ",
    "    with open(p) as ",
    "    def f(a, ",
    "    lambda a, ",
    "    x = [",                   # a comprehension's element may come before its ``for``
    "    x = sum(",
    "    x = (",
    "    import ",
    "    from a import ",
    "    global ",
    "    x = 'in a string ",
    "    # return ",
    "    x = obj.",                # an attribute: the member sites' business
    "    x: ",                     # an annotation, or a block's first statement
])
def test_no_read_where_a_name_may_be_bound(text):
    assert read_site(_scan(text)) is None


def test_a_keyword_just_typed_reads_after_a_blank():
    site = read_site(_scan("    return"))
    assert site is not None and site.after_keyword and site.typed == ""
    assert read_site(_scan("    returned")) is None


def _allowed(mask, vocab) -> set[str]:
    return {vocab.texts[i] for i in range(vocab.size) if mask[i]}


def test_read_mask_allows_only_bound_names():
    vocab = TokenVocabulary.from_texts(TEXTS)
    masks = MaskCache(vocab)
    names = frozenset({"result", "item", "x", "LIMIT", "os", "print", "None", "not", "f"})
    after_blank = _allowed(masks.read_mask((names,), "", False, False), vocab)
    starts_name = {t for t in TEXTS if t.lstrip(" \t")[:1].isalpha() or t.lstrip(" \t")[:1] == "_"}
    for t in TEXTS:
        body = t.lstrip(" \t")
        if t in starts_name:
            head = "".join(c for c in body if c.isalnum() or c == "_")
            rest = body[len(head):]
            ok = any(n.startswith(body) for n in names) if not rest else head in names
            assert (t in after_blank) == ok, t
        else:
            assert t in after_blank, t                      # digits, brackets, newlines
    keyword = _allowed(masks.read_mask((names,), "", True, False), vocab)
    assert {" result", " res", " x", " 0", " (", "(", "\n", "ult", "missing"} <= keyword
    assert not {" missing", " miss", " ult", " wide", " missing("} & keyword
    typed = _allowed(masks.read_mask((names,), "res", False, False), vocab)
    assert "ult" in typed and "ing" not in typed and "(" not in typed
    assert masks.read_mask((names,), "miss", False, False) is None   # left them
    bound = _allowed(masks.read_mask((names, frozenset({"missing"})), "", False, False), vocab)
    assert {"missing", " missing", "missing("} <= bound


def test_a_bound_name_that_is_a_string_prefix_may_end():
    """``f``, ``b``, ``r`` and ``u`` start strings (``f"``) and are common names too: a
    bound ``f`` ends like any name (``f)``, ``f:``), and a string may still follow it
    (``f"``), as a call's argument too; an unbound ``f`` only starts a string."""
    vocab = TokenVocabulary.from_texts(TEXTS)
    masks = MaskCache(vocab)
    for keyword_arg in (False, True):
        bound = _allowed(masks.read_mask((frozenset({"f"}),), "f", False, keyword_arg), vocab)
        assert {")", ",", ":", '"'} <= bound, keyword_arg
        unbound = _allowed(masks.read_mask((frozenset({"x"}),), "f", False, keyword_arg), vocab)
        assert '"' in unbound and not {")", ",", ":"} & unbound, keyword_arg


def test_keyword_argument_names_end_with_an_equals_sign():
    vocab = TokenVocabulary.from_texts(TEXTS)
    masks = MaskCache(vocab)
    names = frozenset({"result"})
    first = _allowed(masks.read_mask((names,), "", False, True), vocab)
    assert {"missing", "wide =", " wide", "res"} <= first and "missing(" not in first
    typed = _allowed(masks.read_mask((names,), "wide", False, True), vocab)
    assert {"=", " =", "ing"} <= typed and not {"(", ",", "==", " =="} & typed


def test_new_attribute_at_a_statement_start_must_be_assigned():
    vocab = TokenVocabulary.from_texts(TEXTS)
    masks = MaskCache(vocab)
    members = frozenset({"size"})
    start = _allowed(masks.target_mask(members, ""), vocab)
    assert {"size", "wide", "wide =", "x"} <= start and "wide(" not in start
    typed = _allowed(masks.target_mask(members, "wide"), vocab)
    assert {" =", "=", ":", ",", " "} <= typed and not {"(", "==", "\n"} & typed
    member = _allowed(masks.target_mask(members, "size"), vocab)
    assert {"(", " ==", "\n"} <= member
    dotted = _allowed(masks.dotted_target_mask(members), vocab)
    assert {".size", ".wide", ".wide ="} <= dotted
    assert _allowed(masks.ended_target_mask(), vocab) >= {" =", "=", ":", " "}
    assert "(" not in _allowed(masks.ended_target_mask(), vocab)


def _walks(tokenizer, state, text: str) -> bool:
    """Whether every token of ``text`` is allowed where it comes, from ``state`` on."""
    for tid in tokenizer.encode(text).ids:
        m = state.mask()
        if m is not None and not m[tid]:
            return False
        state = state.advance_token(tid)
    return True


def test_monitor_through_the_analysis(tmp_path: Path, bundled_model_dir: Path):
    """The monitor of a real document: reads, a path's own bindings, new attributes."""
    from tokenizers import Tokenizer
    tiny_tokenizer = Tokenizer.from_file(str(bundled_model_dir / "tokenizer.json"))
    a = analysis_for(tmp_path, {"m.py": MODULE.replace("|", "pass")})
    vocab = TokenVocabulary.from_tokenizer(tiny_tokenizer)
    state = open_at(a, tmp_path / "m.py", MODULE, vocab)
    shared, own = state.context.free_names
    assert {"len", "return"} <= shared and "f" not in shared | own and {"total", "result", "item", "LIMIT", "os",
                                                  "Box", "by"} <= shared | own
    assert "undefined_thing" not in shared | own

    def ok(s, text):
        return _walks(tiny_tokenizer, s, text)

    assert ok(state, "return total(LIMIT)")
    assert not ok(state, "return undefined_thing")
    assert ok(state, "fresh = by\n        return fresh")       # bound by the path itself
    assert ok(state, "for q in range(by):\n            print(q)")
    assert ok(state, "self.wide = by")                        # a new attribute, assigned
    assert not ok(state, "self.wide(by)")
    assert ok(state, "self.size(by)")
    assert ok(state, "x = [y for y in range(by)]")           # comprehension variables
    assert ok(state, "from os import path\n        return path")   # bound by the import
    assert ok(state, "import os.path as osp\n        return osp")
    assert not ok(state, "from os import path\n        return paths")
    assert not ok(state, "isinstance(undefined_thing")           # it takes no keywords
    assert ok(state, "print(by, sep")                           # print takes sep=
    assert ok(state, "total(items=")                            # total's own keyword
    assert ok(state, 'return f"{by}"') and ok(state, "return rb'x'")   # string prefixes...
    assert not ok(state, "return f(by)")                        # ...are no names


def test_what_the_cursor_line_binds_before_the_cursor_is_bound(tmp_path: Path,
                                                              bundled_model_dir: Path):
    """``fresh = len(by.|`` and ``self.wide = by.|``, half typed: the tree may not hold the
    binding yet, but the lines the draft writes after it may read ``fresh`` and
    ``self.wide``."""
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(str(bundled_model_dir / "tokenizer.json"))

    def ok(s, text):
        return _walks(tok, s, text)

    for line, read in (("fresh = len(by.", "__class__)\n        return fresh"),
                       ("self.wide = by.", "real\n        if self.wide:"),
                       ("for fresh in by.", "real:\n            print(fresh)")):
        text = MODULE.replace("|", line + "|")
        a = analysis_for(tmp_path, {"m.py": text.replace("|", "")})
        state = open_at(a, tmp_path / "m.py", text, TokenVocabulary.from_tokenizer(tok))
        assert ok(state, read), line
        assert not ok(state, "__class__)\n        return undefined_thing"), line


def test_builtin_keywords_come_from_signatures():
    from inkling.analysis.monitor import builtin_keywords
    assert builtin_keywords("isinstance") == frozenset()
    assert builtin_keywords("sorted") == {"key", "reverse"}
    assert builtin_keywords("no_such_builtin") is None


SIGNATURE_OVER_LINES = '''class Box:
    def __init__(self, size):
        self.size = size

    def grow(
        self,
        by: int,
        *,
        step: int = (1),
    ) -> int:
        """Grow by ``by``.

        Returns:
            |
'''


def test_a_signature_over_several_lines_still_encloses_the_body(tmp_path: Path,
                                                                bundled_model_dir: Path):
    """A black-formatted ``def f(\\n    a,\\n) -> T:`` closes its brackets at the def's own
    indent: the enclosing method is found through them (the class, ``self``, the
    parameters a read may name), and a docstring still being typed under it is a string."""
    from tokenizers import Tokenizer

    from inkling.analysis.cursor_scope import enclosing_headers
    tok = Tokenizer.from_file(str(bundled_model_dir / "tokenizer.json"))
    vocab = TokenVocabulary.from_tokenizer(tok)
    body = SIGNATURE_OVER_LINES.replace('        """Grow by ``by``.\n\n        Returns:\n', "")
    headers = enclosing_headers(body.replace("|", ""), body.index("|"))
    assert [(h.kind, h.name, h.first_param) for h in headers] == [
        ("class", "Box", ""), ("def", "grow", "self")]
    a = analysis_for(tmp_path, {"m.py": body.replace("|", "pass")})
    state = open_at(a, tmp_path / "m.py", body, vocab)
    assert state.context.scope.self_name == "self"
    assert _walks(tok, state, "return self.size + by + step")
    assert not _walks(tok, state, "return undefined_thing")
    a = analysis_for(tmp_path, {"m.py": SIGNATURE_OVER_LINES.replace("|", "")})
    in_docstring = open_at(a, tmp_path / "m.py", SIGNATURE_OVER_LINES, vocab)
    assert not in_docstring.scan.in_code and in_docstring.mask() is None
