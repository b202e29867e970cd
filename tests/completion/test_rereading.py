"""Rereading (completion/decoding/rereading.py): each draft's score is the plain
left-to-right log-probability of the text with the draft in place, as transformers' own
forward gives it; drafts sharing their start share nodes without changing a score; the
beam's drafts are reranked by it in the Engine, and only there."""
import pytest
import torch

from inkling.completion.decoding.beam import beam_decode
from inkling.completion.decoding.rereading import Rereading, _trie, reread
from inkling.completion.decoding.request import DecodeRequest
from inkling.completion.decoding.steps import Cancelled
from inkling.completion.decoding.stop_rules import StopRule
from inkling.cache.prompt_cache import PromptCache
from inkling.completion.document import Position
from inkling.completion.engine import Engine
from inkling.completion.errors import OptionError
from inkling.completion.decoding.plan import plan_for
from inkling.completion.options import CompletionOptions, InklingOptions

from conftest import PROMPTS

PREFIX = "import os\n\ndef walk(top):\n    for root, dirs, files in os.walk(top):\n        "
SUFFIX = "\n        yield root\n    return None\n\nprint(walk('.'))\n"


def _reference(rt, before, text):
    """transformers' forward over the whole sequence: the log-probability of ``text``'s
    ids after ``before``'s."""
    ids = rt.encode(text)
    x = torch.tensor([before + ids])
    with torch.no_grad():
        logp = torch.log_softmax(rt.model(x).logits[0].float(), -1)      # [len, vocab]
    return float(sum(logp[len(before) + i - 1, t] for i, t in enumerate(ids)))


def test_the_reread_window_ends_at_the_cursor_line_and_takes_the_lines_after(tiny_runtime):
    rt = tiny_runtime
    r = Rereading.of_text(rt, PREFIX, SUFFIX, 2, 768)
    assert r.before == rt.encode(PREFIX[:PREFIX.rfind("\n") + 1])
    assert r.line_start == "        "
    assert r.after == "\n        yield root\n    return None"
    assert Rereading.of_text(rt, PREFIX, SUFFIX, 0, 768).after == ""
    assert Rereading.of_text(rt, PREFIX, "x)\nnext\n", 0, 768).after == "x)"   # the line's rest
    assert Rereading.of_text(rt, PREFIX, "x)\nnext", 5, 768).after == "x)\nnext"  # file's end
    assert Rereading.of_text(rt, PREFIX, SUFFIX, 2, 5).before == r.before[-5:]
    assert Rereading.of_text(rt, "x = ", SUFFIX, 1, 768).before == []          # first line


def test_each_score_is_the_plain_forward_log_probability_of_the_text_in_place(tiny_runtime):
    rt = tiny_runtime
    r = Rereading.of_text(rt, PREFIX, SUFFIX, 2, 768)
    texts = ["print(root)", "print(files)", "continue", "dirs.sort()"]
    scores = r.scores(texts)
    for text, score in zip(texts, scores):
        want = _reference(rt, r.before, r.line_start + text + r.after)
        assert score == pytest.approx(want, abs=2e-3)
    # scored alone, each gives the same figure (shared nodes change nothing)
    assert [r.scores([t])[0] for t in texts] == pytest.approx(scores, abs=2e-3)
    # nothing to read (no line start, draft or lines after) scores 0, beside others
    bare = Rereading.of_text(rt, "x = 1\n", "", 2, 768)
    assert bare.scores(["", "y = 2"])[0] == 0.0
    assert bare.scores(["", "y = 2"])[1] == pytest.approx(
        _reference(rt, bare.before, "y = 2"), abs=2e-3)
    # nothing before: the first token is not read, the others are
    first = Rereading.of_text(rt, "", "\nz = 3\n", 1, 768)
    ids = rt.encode("y = 2\nz = 3")
    assert first.before == [] and first.scores(["y = 2"])[0] == pytest.approx(
        _reference(rt, ids[:1], rt.decode(ids[1:])), abs=2e-3)


def test_the_token_tree_shares_the_starts_of_sequences():
    tokens, parents, nodes = _trie([[1, 2, 3], [1, 2, 4], [5], [1, 2, 3]])
    assert tokens == [1, 2, 3, 4, 5] and parents == [-1, 0, 1, 1, -1]
    assert nodes == [[0, 1, 2], [0, 1, 3], [4], [0, 1, 2]]


def test_reread_adds_the_reading_to_each_rank_and_raises_when_cancelled(wide_runtime):
    rt = wide_runtime
    cache = PromptCache(rt, "full")
    r = DecodeRequest(cache, cache.sync(rt.encode(PROMPTS[0])).logits, StopRule(False, ""),
                      8, rt.stop_ids, rt.decode, k=4, width=4)
    outs, _ = beam_decode(r)
    assert len(outs) >= 2
    rereading = Rereading.of_text(rt, PROMPTS[0], "\n", 1, 768)
    before = [d.score for d in outs]
    extra = rereading.scores([d.text for d in outs])
    with pytest.raises(Cancelled):
        reread(outs, rereading, None, lambda: True)
    assert [d.score for d in outs] == before                       # untouched
    reread(outs, rereading)
    assert [d.score for d in outs] == pytest.approx([b + x for b, x in zip(before, extra)])


def _engine(runtime, **completion):
    return Engine(InklingOptions().merged({"completion": {
        "decoder": "beam", "draft": "none", "monitor": "off", **completion}}), runtime=runtime)


def test_the_engine_reorders_the_beams_drafts_by_their_reading(wide_runtime):
    uri, text = "file:///a.py", PROMPTS[0] + "\n\nx = 1\n"
    at = Position(1, len("    return "))
    plain, read = _engine(wide_runtime, rereadLines=0), _engine(wide_runtime, rereadLines=1)
    for e in (plain, read):
        e.open(uri, text)
    a = plain.complete(uri, at, k=4, trigger="invoked")
    b = read.complete(uri, at, k=4, trigger="invoked")
    assert a.drafts[0].text != b.drafts[0].text                     # (this case reorders)
    rereading = Rereading.of_text(wide_runtime, PROMPTS[0], "\n\nx = 1\n", 1, 768)
    texts = [d.text for d in b.drafts]
    extra = dict(zip(texts, rereading.scores(texts)))
    rank = [d.logprob / max(1, d.tokens) ** 0.5 + extra[d.text] for d in b.drafts]
    assert len(rank) >= 2 and rank == sorted(rank, reverse=True)
    # automatic completions are greedy and never reread
    assert read.complete(uri, at).drafts[0].text == plain.complete(uri, at).drafts[0].text


def test_a_block_is_searched_at_the_block_width(wide_runtime):
    uri, text = "file:///b.py", "def area(width, height):\n    \n\nx = area(2, 3)\n"
    at = Position(1, 4)                              # an empty block: the body's first line
    greedy = _engine(wide_runtime, decoder="greedy")
    narrow = _engine(wide_runtime, blockBeamWidth=1, rereadLines=0)
    wide = _engine(wide_runtime, blockBeamWidth=8, rereadLines=0)
    for e in (greedy, narrow, wide):
        e.open(uri, text)
    g, n, w = (e.complete(uri, at, k=1, trigger="invoked") for e in (greedy, narrow, wide))
    assert g.block and n.block
    assert n.drafts[0].text == g.drafts[0].text            # width 1 is greedy decoding
    assert w.drafts[0].text != g.drafts[0].text            # (here width 8 finds another)


@pytest.mark.parametrize("key, value", [("rereadLines", -1), ("rereadLines", 17),
                                        ("rereadWindow", 8), ("rereadWindow", 5000),
                                        ("blockBeamWidth", 0), ("blockBeamWidth", 17),
                                        ("rereadDrafts", -1), ("rereadDrafts", 17)])
def test_reread_options_out_of_range_are_refused(key, value):
    with pytest.raises(OptionError, match="completion." + key.replace("L", "_l").replace(
            "W", "_w").replace("B", "_b").replace("D", "_d")):
        InklingOptions().merged({"completion": {key: value}})


def test_reread_drafts_names_how_many_of_the_beams_best_are_reread():
    line = StopRule(False, "")

    def rereads(k, **options):
        c = CompletionOptions(decoder="beam", beam_width=8, **options)
        return plan_for(c, "invoked", k, line).rereads
    assert rereads(3) == 8 and rereads(12) == 12             # 0: max(k, width), as before
    assert rereads(3, reread_drafts=5) == 5
    assert rereads(3, reread_drafts=2) == 3                  # never fewer than the drafts asked
    assert rereads(3, reread_drafts=5, reread_lines=0) == 0  # rereading off


def test_the_engine_rereads_the_drafts_the_option_names(wide_runtime):
    uri, text = "file:///a.py", PROMPTS[0] + "\n\nx = 1\n"
    at = Position(1, len("    return "))
    engines = [_engine(wide_runtime, rereadLines=lines, beamWidth=6, **o) for lines, o in (
        (1, {}), (1, {"rereadDrafts": 6}), (1, {"rereadDrafts": 4}), (0, {}))]
    texts = []
    for e in engines:
        e.open(uri, text)
        texts.append([d.text for d in e.complete(uri, at, k=4, trigger="invoked").drafts])
    default, six, four, unread = texts
    assert default == six                                    # width 6: the default's count
    assert sorted(four) == sorted(unread)     # the beam's best four, reordered by the reading
    assert sorted(default) != sorted(unread)  # (here the reading of six brings in another)
