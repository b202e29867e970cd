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

    from inkling.cache.model_loader import load_runtime
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
