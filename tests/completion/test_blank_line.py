"""At a blank line a suggestion begins with text: the tokens that would end it first (a line
break before any other character, the end of the text) are masked until text has come."""
import pytest
import torch

from inkling.completion.decoding.blank_line import BlankLine, LineEnds
from inkling.completion.document import Position
from inkling.completion.engine import Engine
from inkling.completion.options import InklingOptions

TEXTS = ["", "\n", "  \n", "x", "  y", " ", "\n\n  ", "z"]     # id 0: a special token


class Recorder:
    """An inner monitor that allows everything but id 7 and records what it was given."""

    def __init__(self, seen=()):
        self.seen = list(seen)

    def mask(self, device=None):
        m = torch.ones(len(TEXTS), dtype=torch.bool)
        m[7] = False
        return m

    def forced_text(self):
        return "forced"

    def advance_token(self, token_id):
        return Recorder(self.seen + [token_id])

    def advance(self, text):
        return Recorder(self.seen + [text])


def test_the_tokens_that_end_a_blank_suggestion_are_masked_until_text_comes():
    ends = LineEnds(TEXTS, len(TEXTS), stop_ids=[3])            # "x" stands for a stop token
    assert ends.allowed.tolist() == [False, False, False, False, True, True, False, True]
    state = BlankLine(ends, TEXTS, Recorder())
    assert state.mask().tolist() == [False, False, False, False, True, True, False, False]
    assert state.forced_text() == "forced"
    blank = state.advance_token(5)                   # a space: still blank
    assert isinstance(blank, BlankLine) and blank.inner.seen == [5]
    after = blank.advance_token(4)                   # "  y": text, the monitor's own state
    assert isinstance(after, Recorder) and after.seen == [5, 4]
    assert BlankLine(ends, TEXTS).advance(" q") is None          # no monitor: nothing left
    assert LineEnds(TEXTS, len(TEXTS) + 2, []).allowed.tolist()[-3:] == [True, False, False]
    assert isinstance(BlankLine(ends, TEXTS).advance("\t"), BlankLine)


@pytest.fixture(scope="module")
def silent_runtime(tmp_path_factory):
    """A model whose every logit is 0: greedy takes id 0, the end of text, at once (and
    the first id allowed where one is masked: "!", which only the monitor would refuse)."""
    from conftest import make_tiny_model
    from transformers import LlamaForCausalLM

    from inkling.runtime.model_loader import load_runtime
    path = make_tiny_model(tmp_path_factory.mktemp("silent"), tie_word_embeddings=False)
    model = LlamaForCausalLM.from_pretrained(path)
    with torch.no_grad():
        model.lm_head.weight.zero_()
    model.save_pretrained(path, safe_serialization=True)
    return load_runtime(path, device="cpu", dtype="float32")


TEXT = "def f(x):\n    y = x + 1\n    \n    return y\n"


@pytest.mark.parametrize("decoder", ["greedy", "superposed"])
def test_a_blank_line_gets_a_line_where_the_model_would_end_it(silent_runtime, decoder):
    def complete(fill, position, k):
        opts = InklingOptions().merged({"completion": {
            "fill_blank_lines": fill, "decoder": decoder, "max_new_tokens": 6, "monitor": "off",
            "datastore": "none"}})
        engine = Engine(opts, runtime=silent_runtime)
        engine.open("file:///w/f.py", TEXT)
        return [d.text for d in engine.complete("file:///w/f.py", position, k=k).drafts]

    k = 1 if decoder == "greedy" else 3
    assert all(not t.strip() for t in complete(False, Position(2, 4), k))
    drafts = complete(True, Position(2, 4), k)
    assert drafts and all(t.split("\n")[0].strip() for t in drafts), drafts
    # not at a line with text: the model's choice stands
    assert all(not t.strip() for t in complete(True, Position(1, 9), k))


class _Tokenizer:
    """A tokenizer of the given token texts (id i is texts[i])."""

    def __init__(self, texts):
        self.texts = texts

    def get_vocab_size(self):
        return len(self.texts)

    def decode(self, ids):
        return "".join(self.texts[i] for i in ids)

    def decode_batch(self, batch):
        return [self.decode(ids) for ids in batch]


def test_a_healed_token_that_goes_on_to_end_the_line_is_masked_at_a_blank_line():
    """Token healing gives back the prompt's "\\n"; a token that covers it and goes on
    with another line break ("\\n\\n  ") would end the blank line before anything is
    written: the blank-line rule inside the healing masks it, and nothing else."""
    from inkling.completion.decoding.healing import Healing, TokenTexts
    texts = ["", "\n", "\n\n  ", "\n    x", "\n  \n", "x", "\n "]
    tt = TokenTexts.decoded(_Tokenizer(texts), len(texts))
    ends = LineEnds(texts, len(texts), [])
    healing = Healing(tt, "\n", BlankLine(ends, texts))
    assert healing.mask().tolist() == [False, True, False, True, False, False, True]
    assert Healing(tt, "\n").mask().tolist() == [False, True, True, True, True, False, True]
    after = healing.advance_token(6)               # "\n ": healed, then a space: still blank
    assert isinstance(after, BlankLine)
    assert after.mask().tolist() == ends.allowed.tolist()


def test_at_an_indented_blank_line_the_suggestion_begins_with_text_not_more_whitespace():
    """The cursor at a line's indentation: more whitespace first would indent the line
    deeper than the editor put it (on the card's held-out lines the model ran on in spaces
    to its token budget, or wrote a line 4 columns too deep); at column 0 the suggestion
    may indent (a blank line whose indentation the editor trimmed)."""
    from inkling.completion.decoding.healing import Healing, TokenTexts
    ends = LineEnds(TEXTS, len(TEXTS), stop_ids=[3])
    assert ends.allowed_indented.tolist() == [False, False, False, False, True, False, False, True]
    deep = BlankLine(ends, TEXTS, indented=True)
    assert deep.mask().tolist() == ends.allowed_indented.tolist()
    assert isinstance(deep.advance("\t"), BlankLine) and deep.advance("\t").indented
    assert deep.refuses("  ") and not deep.refuses("  y") and not deep.refuses("")
    assert not BlankLine(ends, TEXTS).refuses("  ") and BlankLine(ends, TEXTS).refuses(" \n")
    texts = ["", "    ", "        ", "    if", "      ", "x"]
    tt = TokenTexts.decoded(_Tokenizer(texts), len(texts))
    ends = LineEnds(texts, len(texts), [])
    healed = Healing(tt, "    ", BlankLine(ends, texts, indented=True))
    assert healed.mask().tolist() == [False, True, False, True, False, False]
    at_zero = Healing(tt, "    ", BlankLine(ends, texts))
    assert at_zero.mask().tolist() == [False, True, True, True, True, False]
    # kept per healed text and rule: asked again, the same mask, each rule its own
    assert healed.mask() is Healing(tt, "    ", BlankLine(ends, texts, indented=True)).mask()
    assert healed.mask().tolist() == [False, True, False, True, False, False]
