"""The monitor inside decoding: every decoder only writes members that exist."""
import re

import pytest

from inkling.completion.document import Position, Range
from inkling.completion.engine import Engine
from inkling.completion.options import InklingOptions

TEXT = ("class Box:\n    def __init__(self):\n        self.width = 1\n        self.height = 2\n\n"
        "    def area(self):\n        return self.\n")
MEMBERS = {"width", "height", "area", "__init__"} | set(dir(object))   # object members too


def _first_name(text: str) -> str:
    m = re.match(r"\w*", text)
    return m.group(0) if m else ""


@pytest.mark.parametrize("decoder,draft", [("greedy", "none"), ("greedy", "suffix"),
                                           ("greedy", "prompt-lookup"), ("branches", "none"),
                                           ("superposed", "none"), ("sequential", "none")])
def test_members_after_self_dot_are_real(tiny_runtime, decoder, draft):
    opts = InklingOptions().merged({"completion": {"monitor": "on", "decoder": decoder,
                                                   "draft": draft, "max_new_tokens": 6}})
    engine = Engine(opts, runtime=tiny_runtime)
    engine.open("file:///w/box.py", TEXT)
    result = engine.complete("file:///w/box.py", Position(6, 20), k=3)
    for d in result.drafts:
        name = _first_name(d.text)
        assert any(m.startswith(name) for m in MEMBERS) and name, d.text


def test_without_the_monitor_a_random_model_writes_anything(tiny_runtime):
    engine = Engine(InklingOptions().merged({"completion": {"max_new_tokens": 6,
                                                            "monitor": "off"}}),
                    runtime=tiny_runtime)
    engine.open("file:///w/box.py", TEXT)
    text = engine.complete("file:///w/box.py", Position(6, 20)).drafts[0].text
    assert not any(m.startswith(_first_name(text)) and _first_name(text) for m in MEMBERS)


def test_the_vocabulary_index_is_prepared_once_a_model(tiny_model_dir, monkeypatch, tmp_path):
    from inkling.analysis.vocabulary import TokenVocabulary
    from inkling.runtime.model_loader import load_runtime
    from inkling.runtime.native_build import cache_root
    monkeypatch.setenv("INKLING_NATIVE_CACHE", str(cache_root()))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))       # no index cached yet
    runtime = load_runtime(tiny_model_dir, device="cpu", dtype="float32")
    built = []
    real = TokenVocabulary.from_tokenizer
    monkeypatch.setattr(TokenVocabulary, "from_tokenizer",
                        staticmethod(lambda *a: (built.append(a), real(*a))[1]))
    options = {"completion": {"monitor": "off", "max_new_tokens": 4, "datastore": "none"}}
    Engine(InklingOptions().merged(options), runtime=runtime).prepare()
    assert built == []                                      # the monitor off: not wanted
    options["completion"]["monitor"] = "on"
    prepared = Engine(InklingOptions().merged(options), runtime=runtime).prepare()
    assert len(built) == 1 and not prepared.failed
    assert any(line.startswith("monitor vocabulary index") for line in prepared.done)
    engine = Engine(InklingOptions().merged(options), runtime=runtime)   # another session
    engine.open("file:///w/box.py", TEXT)
    name = _first_name(engine.complete("file:///w/box.py", Position(6, 20)).drafts[0].text)
    assert len(built) == 1 and any(m.startswith(name) for m in MEMBERS) and name
    # the next load reads it from the user cache, keyed by the tokenizer: nothing built
    again = load_runtime(tiny_model_dir, device="cpu", dtype="float32")
    prepared = Engine(InklingOptions().merged(options), runtime=again).prepare()
    assert len(built) == 1 and not prepared.failed
    assert any(line.startswith("monitor vocabulary index") and "read from the cache" in line
               for line in prepared.done), prepared.done


def test_edits_keep_the_analysis_in_step(tiny_runtime):
    from inkling.completion.document import Range, TextChange
    engine = Engine(InklingOptions().merged({"completion": {"monitor": "on",
                                                            "max_new_tokens": 4}}),
                    runtime=tiny_runtime)
    engine.open("file:///w/box.py", TEXT)
    at = Position(3, 23)
    engine.apply_change("file:///w/box.py", [TextChange("\n        self.depth = 3",
                                                        Range(at, at))])
    assert engine.editor.analysis.text("file:///w/box.py") == engine.document("file:///w/box.py").text
    result = engine.complete("file:///w/box.py", Position(7, 20))
    name = _first_name(result.drafts[0].text)
    assert any(m.startswith(name) for m in MEMBERS | {"depth"}) and name


def test_a_name_only_one_member_fits_is_taken_in_one_forward(tiny_runtime):
    """After ``self.wi`` only ``width`` fits: the rest of the name comes with the step's
    token in one forward pass, and the text is the name the mask would force."""
    text = TEXT.replace("return self.\n", "return self.wi\n").replace(
        "self.width = 1", "self.widthwise_extent_of_the_box = 1")
    opts = InklingOptions().merged({"completion": {"monitor": "on", "max_new_tokens": 40,
                                                   "token_healing": False}})
    engine = Engine(opts, runtime=tiny_runtime)
    engine.open("file:///w/box.py", text)
    out = engine.complete("file:///w/box.py", Position(6, 22))
    assert out.drafts[0].text.startswith("dthwise_extent_of_the_box"), out.drafts[0].text
    rest = len(tiny_runtime.encode("dthwise_extent_of_the_box"))
    assert out.tokens >= rest and out.forwards < out.tokens - rest + 2


def test_healing_masks_are_the_tokens_consistent_with_the_healed_text(tiny_runtime):
    """TokenTexts.mask (prefixes and one sorted range) allows exactly the tokens whose
    text is a prefix of the remaining text or starts with it, and healing hands over to
    no monitor once the text is covered."""
    from inkling.completion.decoding.healing import Healing, TokenTexts
    texts = TokenTexts.decoded(tiny_runtime.tokenizer, tiny_runtime.vocab_size)
    for remaining in (" ", "    ", "def", " return", "(self", "\n", "xyz\u00e9", "zzzzzz"):
        want = {i for i, t in enumerate(texts.texts) if t and "\ufffd" not in t and
                (remaining.startswith(t) or t.startswith(remaining))}
        got = set(texts.mask(remaining).nonzero().flatten().tolist())
        assert got == want, remaining
    state = Healing(texts, "def")
    for tok in tiny_runtime.encode("def"):
        state = state.advance_token(tok)
    assert state is None


def test_a_draft_tree_loses_the_nodes_its_monitor_masks():
    """``allowed_tree``: a node whose token is masked where it comes goes, with what
    hangs under it; the rest keep their order and parents."""
    import torch

    from inkling.completion.drafting.draft_tree import DraftTree
    from inkling.completion.decoding.speculative import allowed_tree

    class Alternating:            # after an even token only odd ones, and the reverse
        def __init__(self, last):
            self.last = last

        def mask(self, device=None):
            m = torch.zeros(6, dtype=torch.bool)
            m[(self.last + 1) % 2::2] = True
            return m

        def advance_token(self, t):
            return Alternating(t)

    #        0:1 -> 1:2 -> 2:3        3:2 (masked after 0) -> 4:3      5:5 -> 6:5 (masked)
    tree = DraftTree([1, 2, 3, 2, 3, 5, 5], [-1, 0, 1, -1, 3, -1, 5], 1.0, "s", 2)
    got, states = allowed_tree(tree, Alternating(1), [0])  # the root comes after a 0
    assert got.tokens == [1, 2, 3, 5] and got.parents == [-1, 0, 1, -1]
    assert (got.source, got.match) == ("s", 2)
    assert [s.last for s in states] == [0, 1, 2, 3, 5]     # the root's, then each kept node's
    assert allowed_tree(tree, None, [0]) == (tree, None)

    class Once:                   # masks token 2 once, then hands over to no monitor at all
        def mask(self, device=None):
            m = torch.ones(6, dtype=torch.bool)
            m[2] = False
            return m

        def advance_token(self, t):
            return None

    # the nodes under a state that handed over are kept, unmasked: 1 -> 2 -> 3 stays whole,
    # the root's sibling 2 goes
    tree = DraftTree([1, 2, 3, 2], [-1, 0, 1, -1], 1.0, "s", 2)
    got, states = allowed_tree(tree, Once(), [])
    assert got.tokens == [1, 2, 3] and got.parents == [-1, 0, 1]
    assert isinstance(states[0], Once) and states[1:] == [None, None, None]
    # a hand-over among the tokens fed before the root leaves the whole tree
    assert allowed_tree(tree, Once(), [4, 4]) == (tree, [None] * 5)


def test_a_verified_tree_is_walked_masking_only_the_rows_it_walks():
    """``walk``: the accepted path is the one the fully masked rows give (``accept``),
    but only the walked rows are masked and only their states advanced."""
    import torch

    from inkling.completion.drafting.draft_tree import DraftTree
    from inkling.completion.decoding.speculative import accept, walk

    calls = []

    class NoOdd:                  # odd tokens are masked everywhere
        def __init__(self, seen):
            self.seen = seen

        def mask(self, device=None):
            calls.append(self.seen)
            m = torch.zeros(8, dtype=torch.bool)
            m[::2] = True
            return m

        def advance_token(self, t):
            return NoOdd(self.seen + (t,))

    #   root -> 0:2 -> 1:4 -> 2:6        root -> 3:3 (odd)      0:2 -> 4:1
    tree = DraftTree([2, 4, 6, 3, 1], [-1, 0, 1, -1, 0], 1.0, "s", 1)
    out = torch.full((6, 8), -1.0)
    for row, best in enumerate([3, 4, 1, 0, 7, 7]):   # unmasked argmax per row
        out[row, best] = 5.0
    for row, second in enumerate([2, 1, 4, 0, 0, 0]):  # what the mask leaves best
        out[row, second] = 4.0
    full = torch.stack([out[r].masked_fill(~NoOdd(()).mask(), float("-inf"))
                        for r in range(6)])
    want, _ = accept(tree, full)
    calls.clear()
    w = walk(tree, out, NoOdd(()))
    assert w.path == want == [0, 1]
    assert calls == [(), (2,), (2, 4)]                 # the root's row, then each accepted
    assert w.rows.shape == (3, 8) and [int(r.argmax()) for r in w.rows] == [2, 4, 4]
    assert [t for t, _ in w.logprobs(tree, 2)] == [2, 4]


def test_the_monitor_at_an_edits_end_is_made_with_the_edit(tiny_runtime, monkeypatch):
    """After an edit the monitor and the guard at the cursor it left are made at once
    (while the editor waits out its debounce), with the guard's window parsed, and a
    completion there takes them: the
    same drafts as made at the completion; elsewhere, or after a file changed on disk,
    they are made at the completion."""
    from inkling.completion.document import TextChange
    from inkling.completion.open_analysis import OpenAnalysis
    made = []
    real = OpenAnalysis._made
    monkeypatch.setattr(OpenAnalysis, "_made",
                        lambda self, doc, offset, rt: (made.append(offset), real(self, doc, offset, rt))[1])
    opts = InklingOptions().merged({"completion": {"monitor": "on", "max_new_tokens": 6}})
    uri = "file:///w/box.py"
    start = TEXT.replace("return self.\n", "return \n")
    engine = Engine(opts, runtime=tiny_runtime)
    engine.open(uri, start)
    engine.complete(uri, Position(6, 15))                   # the runtime known from now on
    edit = TextChange("self.", Range(Position(6, 15), Position(6, 15)))
    engine.apply_change(uri, [edit], 2)
    end = engine.document(uri).offset_at(Position(6, 20))
    assert made[-1] == end                                  # made with the edit
    guard = engine.editor._analysis._ahead[4][1]
    assert "checker" in guard.__dict__ and guard.checker.old_breaks() is \
        guard.checker.old_breaks()                          # the window parsed, its breaks kept
    count = len(made)
    ahead = engine.complete(uri, Position(6, 20))
    assert len(made) == count                               # the completion took them
    engine.open("file:///w/other.py", "x = 1\n")             # another document: made again
    again = engine.complete(uri, Position(6, 20))
    assert len(made) == count + 1                           # made at the completion
    assert [d.text for d in ahead.drafts] == [d.text for d in again.drafts]
    engine.complete(uri, Position(6, 19))                   # elsewhere: made there
    assert made[-1] == end - 1
    engine.apply_change(uri, [TextChange("w", Range(Position(6, 20), Position(6, 20)))], 3)
    engine.workspace_file_changed("/w/other.py")            # the index may change
    engine.complete(uri, Position(6, 21))
    assert made[-1] == end + 1 and made[-2] == end + 1      # made again at the completion


def test_an_analysis_that_fails_after_an_edit_never_fails_the_edit(tiny_runtime, monkeypatch):
    """The monitor made with an edit raises: the edit is applied all the same, and the
    completion there makes its monitor itself."""
    from inkling.completion.document import TextChange
    from inkling.completion.open_analysis import OpenAnalysis
    real, calls = OpenAnalysis._made, []

    def made(self, doc, offset, rt):
        calls.append(offset)
        if len(calls) == 2:                                 # the one made with the edit
            raise RuntimeError("broken analysis")
        return real(self, doc, offset, rt)
    monkeypatch.setattr(OpenAnalysis, "_made", made)
    opts = InklingOptions().merged({"completion": {"monitor": "on", "max_new_tokens": 6}})
    uri, start = "file:///w/box.py", TEXT.replace("return self.\n", "return \n")
    engine = Engine(opts, runtime=tiny_runtime)
    engine.open(uri, start)
    engine.complete(uri, Position(6, 15))
    engine.apply_change(uri, [TextChange("self.", Range(Position(6, 15), Position(6, 15)))], 2)
    assert engine.document(uri).text == TEXT and len(calls) == 2
    result = engine.complete(uri, Position(6, 20))
    assert len(calls) == 3 and result.drafts                # made at the completion


@pytest.mark.parametrize("name", ["bundled", "qwen2.5-coder-0.5b", "deepseek-coder-1.3b-base"])
def test_the_healing_table_from_the_monitors_vocabulary_is_the_decoded_one(name, tmp_path):
    """TokenTexts read off the monitor's vocabulary index (as a completion with the monitor
    on makes it) equals the one decoded id by id, special tokens left out."""
    from tokenizers import Tokenizer
    from inkling.analysis.vocabulary_cache import cached_vocabulary
    from inkling.completion.decoding.healing import TokenTexts
    from inkling.models import BUNDLED_MODEL_DIR
    from zoo_models import zoo_model
    folder = BUNDLED_MODEL_DIR if name == "bundled" else zoo_model(name)
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    size = tokenizer.get_vocab_size() + 3                   # a model's padded output rows
    vocab, _ = cached_vocabulary(tokenizer, size, folder=tmp_path)
    want = TokenTexts.decoded(tokenizer, size)
    got = TokenTexts.of_vocabulary(vocab, size)
    assert got.texts[:len(want.texts)] == want.texts and not any(got.texts[len(want.texts):])
    assert got.vocab_size == want.vocab_size == size
    for remaining in (" ", "def", "<|", "\n", "self."):
        assert got.mask(remaining).equal(want.mask(remaining)), remaining
