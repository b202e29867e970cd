"""The real families' tokenizers (the model zoo's) are cut into lines, and the pieces give
exactly the ids of the whole text: on random code-like text, llama.cpp's reference texts and
the standard library's sources. A wider cut than the one chosen has a counterexample."""
from __future__ import annotations

import sysconfig
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import AddedToken, Tokenizer

from inkling.runtime.chunked_encoder import CUTS, ChunkedEncoder, Rule
from zoo_models import ZOO_TOKENIZERS, zoo, zoo_tokenizer

BUNDLED = Path(__file__).resolve().parents[2] / "models" / "inkling-tiny" / "tokenizer.json"
# the rule each family's pre-tokenizer allows (docs/decisions/line-cuts.md has the proofs)
RULES = {"qwen2": Rule.LINE_START, "qwen2.5": Rule.LINE_START, "llama-bpe": Rule.LINE_START,
         "deepseek-coder": Rule.NEWLINE, "starcoder": Rule.NON_SPACE}
# where a cut wider than a family's rule joins what the whole text keeps apart
COUNTEREXAMPLES = {
    Rule.NEWLINE: "x = 1\n\n\ny = 2\n",                  # "\n\n\n" is one piece
    Rule.LINE_START: "def f(a, b):\n    return a  \nb = 1\n",   # "\n    " and "  \n"
    Rule.NON_SPACE: "print(x)\nfoo()\n",                 # ")\n" is one piece
}
STDLIB = Path(sysconfig.get_paths()["stdlib"])

INDENT = st.sampled_from(["", "", "    ", "        ", "\t", "\t\t", "  \t", " ", "\u3000"])
WORD = st.sampled_from([
    "def", "return", "x", "self.items", "value_2", "_", "123", "4567", "0", "3.14e-2", "'s",
    "don't", "'LL", "it's", "()", "):", "[1, 2]", "{", "}", "},", "#", "# note", '"""', "'",
    "\\", "->", "==", "!=", "+=", "é", "café", "naïve", "日本語", "한국", "\u00b2", "\u0663",
    "\U0001f600", "e\u0301", "\u0301", "\x1c", "\x0b", "\x0c", "<|fim_prefix|>", "<fim_prefix>",
    "<｜fim▁begin｜>", "<|endoftext|>", "print(", "f'{a}'", "0x1F", "...", "\u00a0", "--"])
SPACE = st.sampled_from(["", " ", " ", "  ", "\t", "\u00a0", "\u3000"])
TRAIL = st.sampled_from(["", "", "", " ", "  ", "\t", " \t", "\u3000"])
BREAK = st.sampled_from(["\n", "\n", "\n", "\n", "\r\n", "\r", "\n\n", "\n  \n", "\n\t\n\n",
                         "\r\n\r\n", "\x85", "\u2028", "\n\r"])
LINE = st.tuples(INDENT, st.lists(st.tuples(WORD, SPACE), max_size=7), TRAIL, BREAK).map(
    lambda t: t[0] + "".join(w + s for w, s in t[1]) + t[2] + t[3])
CODE = st.tuples(st.lists(LINE, max_size=25), st.sampled_from(["", "tail", "  ", "9"])).map(
    lambda t: "".join(t[0]) + t[1])


def _same(tok: Tokenizer, encoder: ChunkedEncoder, text: str) -> None:
    whole = tok.encode(text, add_special_tokens=False).ids
    assert "".join(encoder.pieces(text)) == text
    assert encoder.encode(text) == whole, [p for p in encoder.pieces(text)]


def _cut_ids(tok: Tokenizer, rule: Rule, text: str) -> list[int]:
    return [i for piece in CUTS[rule].split(text)
            for i in tok.encode(piece, add_special_tokens=False).ids]


@pytest.mark.parametrize("family", ZOO_TOKENIZERS)
def test_each_family_is_cut_into_lines(family):
    encoder = ChunkedEncoder.for_tokenizer(zoo_tokenizer(family))
    assert encoder.rule != Rule.WHOLE, encoder.reason
    assert encoder.rule == RULES[family], encoder.reason
    text = "".join(f"    value_{i} = base * {i}\n" for i in range(30))
    assert len(encoder.pieces(text)) >= 30


@pytest.mark.parametrize("family", ZOO_TOKENIZERS)
@settings(max_examples=400, deadline=None)
@given(text=CODE)
def test_pieces_give_the_ids_of_the_whole_code(family, text):
    tok = zoo_tokenizer(family)
    _same(tok, ChunkedEncoder.for_tokenizer(tok), text)


@pytest.mark.parametrize("family", ZOO_TOKENIZERS)
def test_reference_texts_give_the_ids_of_the_whole(family):
    """llama.cpp's reference texts: whitespace runs, CRLF, digits, scripts, emoji."""
    tok = zoo_tokenizer(family)
    encoder = ChunkedEncoder.for_tokenizer(tok)
    vocab = zoo.sources() / f"models/ggml-vocab-{zoo.TOKENIZERS[family].vocab}.gguf"
    texts = [t for t, _ in zoo.reference_tests(vocab)]
    assert texts
    for text in texts + ["\n".join(texts), "\r\n".join(texts)]:
        _same(tok, encoder, text)


def _stdlib_sample() -> list[str]:
    files = sorted(STDLIB.glob("**/*.py"))
    return [f.read_text(encoding="utf-8", errors="replace") for f in files[::60]][:40]


@pytest.mark.parametrize("family", ZOO_TOKENIZERS)
def test_standard_library_sources_give_the_ids_of_the_whole(family):
    tok = zoo_tokenizer(family)
    encoder = ChunkedEncoder.for_tokenizer(tok)
    sources = _stdlib_sample()
    assert len(sources) >= 20
    for text in sources + ["".join(sources[:5]).replace("\n", "\r\n")]:
        _same(tok, encoder, text)


@pytest.mark.parametrize("family", ZOO_TOKENIZERS)
def test_a_wider_cut_than_the_rule_breaks_the_ids(family):
    """The cuts a family is refused are unsafe indeed, so the rules are not merely careful."""
    tok = zoo_tokenizer(family)
    rule = RULES[family]
    for wider in [r for r in CUTS if r != rule and r not in _NARROWER.get(rule, ())]:
        text = COUNTEREXAMPLES[wider]
        assert _cut_ids(tok, wider, text) != tok.encode(text, add_special_tokens=False).ids
        assert _cut_ids(tok, rule, text) == tok.encode(text, add_special_tokens=False).ids


_NARROWER = {Rule.NEWLINE: (Rule.LINE_START, Rule.NON_SPACE)}   # implied by "after every \n"


def test_an_added_token_that_strips_breaks_the_cut_so_it_is_refused():
    tok = Tokenizer.from_file(str(BUNDLED))
    tok.add_special_tokens([AddedToken("<sep>", rstrip=True)])
    text = "a = 1<sep>\nb = 2\n"
    assert _cut_ids(tok, Rule.NON_SPACE, text) != tok.encode(text, add_special_tokens=False).ids
    encoder = ChunkedEncoder.for_tokenizer(tok)
    assert encoder.rule == Rule.WHOLE and "'<sep>' strips" in encoder.reason
    assert encoder.encode(text) == tok.encode(text, add_special_tokens=False).ids
