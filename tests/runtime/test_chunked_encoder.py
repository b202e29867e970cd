"""Line-by-line tokenization gives exactly the ids of tokenizing the text whole."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import Regex, Tokenizer, models, normalizers, pre_tokenizers, trainers

from inkling.runtime.chunked_encoder import (CUTS, LLAMA3_PATTERN, QWEN2_PATTERN, ChunkedEncoder,
                                           Rule, split_rule, tokenizer_rule)

BUNDLED = Path(__file__).resolve().parents[2] / "models" / "inkling-tiny" / "tokenizer.json"
CODE = [
    "def parse(self, text):\n    return [int(x) for x in text.split(',')]\n",
    "class Store:\n    def __init__(self):\n        self.items = {}\n\n\n# done\n",
    "if __name__ == '__main__':\n\tmain(sys.argv[1:])  \n  x = 1234567\r\n",
    "s = \"don't\" + 'it''s'\nvalue_2 = value_1 * 3.14e-2\n\u00e9t\u00e9 = 'caf\u00e9'\n",
]


def _trained(pre_tokenizer, normalizer=None) -> Tokenizer:
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizer
    if normalizer is not None:
        tok.normalizer = normalizer
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=["<|fim_prefix|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train_from_iterator(CODE * 20, trainer)
    return tok


def _split(pattern: str):
    return pre_tokenizers.Sequence([pre_tokenizers.Split(Regex(pattern), "isolated"),
                                    pre_tokenizers.ByteLevel(add_prefix_space=False,
                                                             use_regex=False)])


TOKENIZERS = {
    "bundled": lambda: Tokenizer.from_file(str(BUNDLED)),
    "gpt2": lambda: _trained(pre_tokenizers.ByteLevel(add_prefix_space=False)),
    "digits": lambda: _trained(pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False)])),
    "llama3": lambda: _trained(_split(LLAMA3_PATTERN)),
    "qwen2": lambda: _trained(_split(QWEN2_PATTERN), normalizers.NFC()),
    # DeepSeek-Coder's published pre-tokenizer: its first step isolates every line break
    "deepseek": lambda: _trained(pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex("[\r\n]"), "isolated"),
        pre_tokenizers.Split(Regex(r"\s?\p{L}+"), "isolated"),
        pre_tokenizers.Split(Regex(r"\s?\p{P}+"), "isolated"),
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)]),
        normalizers.Sequence([])),
}
RULES = {"bundled": "non-space", "gpt2": "non-space", "digits": "non-space",
         "llama3": "line-start", "qwen2": "line-start", "deepseek": "newline"}
_built: dict[str, Tokenizer] = {}


def tokenizer(name: str) -> Tokenizer:
    if name not in _built:
        _built[name] = TOKENIZERS[name]()
    return _built[name]


ALPHABET = list("abcxyz_AZ019 \t\n\n\n\r.,:;()[]{}'\"=+-*/#\\") + [
    "\u00e9", "\u00b2", "\u0663", "\u3000", "\u00a0", "\x1c", "\x85", "\u2028", "\u0301",
    "\U0001f600", "'s", "'ll", "<|fim_prefix|>", "\n    ", "    ", "def ", "123"]
texts = st.lists(st.sampled_from(ALPHABET), max_size=60).map("".join)


@pytest.mark.parametrize("name", sorted(TOKENIZERS))
def test_rule_is_detected(name):
    assert ChunkedEncoder.for_tokenizer(tokenizer(name)).rule == RULES[name]


@pytest.mark.parametrize("name", sorted(TOKENIZERS))
@settings(max_examples=300, deadline=None)
@given(text=texts)
def test_pieces_give_the_ids_of_the_whole_text(name, text):
    tok = tokenizer(name)
    encoder = ChunkedEncoder.for_tokenizer(tok)
    whole = tok.encode(text, add_special_tokens=False).ids
    assert encoder.encode(text) == whole
    assert "".join(encoder.pieces(text)) == text
    assert encoder.encode(text) == whole            # again, from remembered pieces


@pytest.mark.parametrize("name", ["bundled", "llama3", "deepseek"])
def test_code_is_cut_into_lines_and_only_changed_lines_are_tokenized(name):
    tok = tokenizer(name)
    calls: list[str] = []
    encoder = ChunkedEncoder(lambda t: calls.append(t) or tok.encode(
        t, add_special_tokens=False).ids, RULES[name])
    text = "".join(f"value_{i} = base * {i}\nname_{i} = value_{i}\n" for i in range(40))
    encoder.encode(text)
    # a piece per line, and the last "\n" where the cut is before the line break
    assert len(encoder.pieces(text)) == (81 if RULES[name] == "non-space" else 80)
    calls.clear()
    edited = text.replace("name_7 = value_7", "name_7 = value_7 + 1")
    assert encoder.encode(edited) == tok.encode(edited, add_special_tokens=False).ids
    assert len(calls) == 1 and "value_7 + 1" in calls[0] and len(calls[0]) < 30


@pytest.mark.parametrize("pre, norm", [
    ({"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "first"}, None),
    ({"type": "ByteLevel", "add_prefix_space": True, "use_regex": True}, None),
    ({"type": "ByteLevel", "add_prefix_space": False, "use_regex": True}, {"type": "Lowercase"}),
    ({"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": r"\s+"}, "behavior": "Isolated", "invert": False},
        {"type": "ByteLevel", "add_prefix_space": False, "use_regex": False}]}, None),
    ({"type": "Sequence", "pretokenizers": [
        {"type": "Punctuation", "behavior": "Isolated"},
        {"type": "ByteLevel", "add_prefix_space": False, "use_regex": True}]}, None),
    (None, None),
])
def test_unknown_or_unsafe_tokenizers_are_tokenized_whole(pre, norm):
    rule, reason = split_rule(pre, norm)
    assert rule == "whole" and reason
    encoder = ChunkedEncoder(lambda t: [len(t)], rule)
    assert encoder.pieces("a\nb\n") == ["a\nb\n"] and encoder.encode("a\nb\n") == [4]


GPT2_STEP = {"type": "ByteLevel", "add_prefix_space": False, "use_regex": True}


@pytest.mark.parametrize("pre, norm, added, says", [
    (GPT2_STEP, {"type": "Lowercase"}, [], "normalizer Lowercase"),
    (GPT2_STEP, {"type": "Sequence", "normalizers": [{"type": "NFC"}, {"type": "NFKC"}]}, [],
     "normalizer NFKC"),
    (GPT2_STEP, None, [{"content": "<br>\n", "lstrip": False, "rstrip": False}],
     "'<br>\\n' holds a line break"),
    (GPT2_STEP, None, [{"content": "<mask>", "lstrip": True, "rstrip": False}],
     "'<mask>' strips the whitespace"),
    ({"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": QWEN2_PATTERN}, "behavior": "Removed",
         "invert": False}]}, None, [], "step 1, Split on Qwen2's pattern, Removed"),
    ({"type": "Sequence", "pretokenizers": [
        {"type": "Digits", "individual_digits": True},
        {"type": "ByteLevel", "add_prefix_space": False, "use_regex": False}]}, None, [],
     "no pre-tokenizer step separates"),
    ({"type": "Sequence", "pretokenizers": [
        {"type": "Digits", "individual_digits": True}, {"type": "Punctuation"}]}, None, [],
     "step 2, Punctuation"),
    (None, None, [], "no pre-tokenizer"),
])
def test_whole_says_why(pre, norm, added, says):
    rule, reason = split_rule(pre, norm, added)
    assert rule == "whole" and says in reason


def test_a_safe_rule_names_the_step_that_separates():
    rule, reason = tokenizer_rule(tokenizer("deepseek"))
    assert rule == "newline" and reason.startswith("pre-tokenizer step 1, Split on line breaks")
    assert ChunkedEncoder.for_tokenizer(tokenizer("digits")).reason.startswith(
        "pre-tokenizer step 2, ByteLevel")


def test_a_truncating_or_padding_tokenizer_is_tokenized_whole():
    tok = Tokenizer.from_str(tokenizer("bundled").to_str())
    tok.enable_truncation(8)
    assert tokenizer_rule(tok) == ("whole", "the tokenizer truncates or pads what it encodes")
    tok.no_truncation()
    tok.enable_padding(length=8)
    assert tokenizer_rule(tok).rule == "whole"


def test_the_bundled_model_keeps_its_cuts():
    """The bundled model's rule and pieces are what they were before the rules grew."""
    encoder = ChunkedEncoder.for_tokenizer(tokenizer("bundled"))
    assert encoder.rule == Rule.NON_SPACE and CUTS[Rule.NON_SPACE].pattern == r"(?<=\S)(?=\n)"
    for text in CODE:
        assert encoder.pieces(text) == re.split(r"(?<=\S)(?=\n)", text)


def test_an_unknown_rule_is_refused():
    with pytest.raises(ValueError, match="unknown split rule"):
        ChunkedEncoder(lambda t: [], "lines")


def test_remembered_text_stays_within_its_budget(monkeypatch):
    """Whole windows (a tokenizer cut nowhere) are remembered too, within a character
    budget rather than a count of entries, so long texts cannot pile up."""
    from inkling.runtime import chunked_encoder
    monkeypatch.setattr(chunked_encoder, "MEMO_CHARS", 1000)
    tok = tokenizer("bundled")
    encoder = ChunkedEncoder.for_tokenizer(tok)
    whole = ChunkedEncoder(lambda t: tok.encode(t, add_special_tokens=False).ids, "whole")
    for i in range(50):
        text = f"window_{i} = [{', '.join(str(j) for j in range(i, i + 60))}]\n" * 3
        want = tok.encode(text, add_special_tokens=False).ids
        assert encoder.encode(text) == want and whole.encode(text) == want
        assert encoder._memo_chars <= 1000 and whole._memo_chars <= 1000
        assert sum(map(len, whole._memo)) == whole._memo_chars
