"""Several drafts: branches (lossless per branch), sequential, dedup, ranking, bad k."""
import math

import pytest
import torch

from inkling.cache.prompt_cache import PromptCache
from inkling.completion.decoding.branches import (at_word_end, branch_decode, first_tokens,
                                                  lead_budget, lead_in, sequential_decode)
from inkling.completion.decoding.greedy import greedy_decode
from inkling.completion.decoding.ranking import rank_drafts
from inkling.completion.decoding.request import DecodeRequest
from inkling.completion.decoding.steps import Decoded, masked
from inkling.completion.decoding.stop_rules import StopRule, line_count
from inkling.completion.document import Position
from inkling.completion.engine import Engine
from inkling.completion.errors import OptionError
from inkling.completion.options import InklingOptions

from conftest import PROMPTS


def _alone(rt, ids, first, stop, budget):
    cache = PromptCache(rt, "full")
    cache.sync(ids)
    forced = torch.full((rt.vocab_size,), float("-inf"))
    forced[first] = 0.0
    return greedy_decode(DecodeRequest(cache, forced, stop, budget, rt.stop_ids, rt.decode))


@pytest.mark.parametrize("text", PROMPTS)
def test_branch_i_is_the_greedy_continuation_of_the_ith_first_token(wide_runtime, text):
    rt = wide_runtime
    ids = rt.encode(text)
    stop = StopRule(True, "")
    cache = PromptCache(rt, "full")
    logits = cache.sync(ids).logits
    firsts = first_tokens(logits, 4)
    outs, forwards = branch_decode(DecodeRequest(cache, logits, stop, 12, rt.stop_ids,
                                                 rt.decode, k=4))
    assert len(outs) == len(firsts) and forwards <= 12
    lead = stop.capped(line_count(outs[0].text))        # the others end within its lines
    budget = lead_budget(outs[0], 12)                    # and within its tokens
    for i, ((tok, _), out) in enumerate(zip(firsts, outs)):
        alone = _alone(rt, ids, tok, stop if i == 0 else lead, 12 if i == 0 else budget)
        if out.stopped_by == "lead-extent":
            assert alone.stopped_by == "max-tokens" and budget < 12
            assert out.text == at_word_end(alone.text) and alone.text.startswith(out.text)
        else:
            assert out.text == alone.text
        # an alternative may have decoded past the lead's lines before the lead ended
        assert out.token_ids[:len(alone.token_ids)] == alone.token_ids


def test_sequential_gives_the_same_drafts_at_k_times_the_cost(wide_runtime):
    rt = wide_runtime
    ids = rt.encode(PROMPTS[0])
    stop = StopRule(True, "")
    c1, c2 = PromptCache(rt, "full"), PromptCache(rt, "full")
    b, fb = branch_decode(DecodeRequest(c1, c1.sync(ids).logits, stop, 10, rt.stop_ids,
                                        rt.decode, k=3))
    s, fs = sequential_decode(DecodeRequest(c2, c2.sync(ids).logits, stop, 10, rt.stop_ids,
                                            rt.decode, k=3))
    assert [o.token_ids for o in b] == [o.token_ids for o in s]
    assert fs > 2 * fb


class _Sure:
    """A monitor that allows only ``ids[i]`` at step i (the model made sure of them),
    and every token after them."""

    def __init__(self, ids, vocab, step=0):
        self.ids, self.vocab, self.step = ids, vocab, step

    def mask(self, device):
        if self.step >= len(self.ids):
            return None
        allowed = torch.zeros(self.vocab, dtype=torch.bool, device=device)
        allowed[self.ids[self.step]] = True
        return allowed

    def advance_token(self, tok):
        return _Sure(self.ids, self.vocab, self.step + 1)


def _sure_request(rt, ids, sure, k, stop=StopRule(True, ""), budget=12):
    cache = PromptCache(rt, "full")
    return DecodeRequest(cache, cache.sync(ids).logits, stop, budget, rt.stop_ids, rt.decode,
                         k=k, monitor=_Sure(sure, rt.vocab_size))


@pytest.mark.parametrize("text", PROMPTS[:2])
def test_the_branches_start_where_the_model_is_first_unsure(wide_runtime, text):
    """Where one token alone is sensible the branches share greedy's (``lead_in``) and
    part after it: k drafts, not one; the lead draft is greedy's, token for token; the
    sequential baseline decodes the same branches; the lead-in's tokens leave the cache."""
    rt = wide_runtime
    ids = rt.encode(text)
    sure = rt.encode(" x =")[:2]
    assert len(first_tokens(_sure_request(rt, ids, sure, 3).logits, 3)) > 1
    r = _sure_request(rt, ids, sure, 3)
    prompt = len(r.cache.ids)
    lead = lead_in(r)
    assert lead.ids == sure and lead.forwards == len(sure) and len(r.cache.ids) == prompt + 2
    outs, forwards = branch_decode(_sure_request(rt, ids, sure, 3))
    assert len(outs) == len(first_tokens(masked(lead.logits, lead.monitor), 3)) > 1
    assert all(o.token_ids[:2] == sure for o in outs)
    assert len({o.text for o in outs}) == len(outs)
    greedy = greedy_decode(_sure_request(rt, ids, sure, 1))
    assert (outs[0].token_ids, outs[0].text) == (greedy.token_ids, greedy.text)
    assert math.isclose(outs[0].logprob, greedy.logprob, abs_tol=1e-4)
    r = _sure_request(rt, ids, sure, 3)
    seq, fs = sequential_decode(r)
    assert [o.token_ids for o in seq] == [o.token_ids for o in outs]
    assert [o.text for o in seq] == [o.text for o in outs]
    assert all(math.isclose(a, b, abs_tol=1e-4)
               for o, q in zip(outs, seq) for a, b in zip(o.lps, q.lps))
    assert len(r.cache.ids) == prompt and fs > forwards


def test_a_lead_in_stops_before_the_token_that_ends_the_draft(wide_runtime):
    """A sure line end in line mode: one empty draft, nothing taken before it."""
    rt = wide_runtime
    ids = rt.encode(PROMPTS[0])
    newline = rt.encode("\n")
    r = _sure_request(rt, ids, newline, 3, stop=StopRule(False, "    return "))
    assert lead_in(r).ids == []
    outs, _ = branch_decode(_sure_request(rt, ids, newline, 3,
                                          stop=StopRule(False, "    return ")))
    assert [o.text for o in outs] == [""]


def _d(text, logprob, n):
    return Decoded(text, list(range(n)), logprob, 0, "stop-rule")


def test_dedup_and_ranking():
    ranked = rank_drafts([_d("a = 1", -4.0, 4), _d("b", -0.5, 1), _d("a = 1  ", -1.0, 4),
                          _d("", -0.1, 1), _d("c = 2", -2.0, 2)])
    assert [d.text for d in ranked] == ["a = 1  ", "b", "c = 2"]   # -0.25, -0.5, -1.0 per token


def test_k_beyond_the_sensible_candidates_gives_fewer_drafts(wide_runtime):
    rt = wide_runtime
    logits = torch.full((rt.vocab_size,), -30.0)
    logits[[5, 9]] = 10.0                                      # only two tokens are plausible
    assert [t for t, _ in first_tokens(logits, 8)] in ([5, 9], [9, 5])


def test_engine_returns_k_distinct_ranked_drafts(wide_runtime):
    engine = Engine(InklingOptions().merged({"completion": {"decoder": "branches"}}),
                    runtime=wide_runtime)
    engine.open("file:///w/a.py", PROMPTS[0] + "\n")
    result = engine.complete("file:///w/a.py", Position(1, 11), k=3, trigger="invoked")
    texts = [d.text.rstrip() for d in result.drafts]
    assert 1 <= len(texts) <= 3 and len(set(texts)) == len(texts) and all(texts)
    scores = [d.logprob / max(1, d.tokens) for d in result.drafts]
    assert scores == sorted(scores, reverse=True)


@pytest.mark.parametrize("k", [0, -2, 10_000])
def test_bad_k_is_a_clear_error(wide_runtime, k):
    engine = Engine(InklingOptions().merged({"completion": {"decoder": "branches"}}),
                    runtime=wide_runtime)
    engine.open("file:///w/a.py", "x = 1\n")
    with pytest.raises(OptionError, match="between 1 and 16"):
        engine.complete("file:///w/a.py", Position(0, 5), k=k)
    with pytest.raises(OptionError, match="completion.drafts must be"):
        engine.configure({"completion": {"drafts": k}})


def test_superposed_gives_distinct_ranked_drafts_and_counts_forwards(wide_runtime):
    engine = Engine(InklingOptions().merged({"completion": {"decoder": "superposed"}}),
                    runtime=wide_runtime)
    engine.open("file:///w/a.py", PROMPTS[0] + "\n\nprint(area(2, 3))\n")
    result = engine.complete("file:///w/a.py", Position(1, 11), k=3, trigger="invoked")
    texts = [d.text.rstrip() for d in result.drafts]
    assert 1 <= len(texts) <= 3 and len(set(texts)) == len(texts)
    assert result.forwards >= 2


def test_superposed_needs_input_embeddings(wide_runtime, monkeypatch):
    from inkling.runtime.errors import ModelError
    monkeypatch.setattr(wide_runtime.model, "get_input_embeddings", lambda: None)
    engine = Engine(InklingOptions().merged({"completion": {"decoder": "superposed"}}),
                    runtime=wide_runtime)
    engine.open("file:///w/a.py", "x = 1\n")
    with pytest.raises(ModelError, match="input embeddings"):
        engine.complete("file:///w/a.py", Position(0, 5), k=3)


@pytest.mark.parametrize("decoder", ["branches", "sequential"])
@pytest.mark.parametrize("draft", ["suffix", "prompt-lookup"])
def test_drafting_per_branch_is_lossless_and_saves_passes(wide_runtime, decoder, draft):
    """Each branch verifies its own draft tree in the shared pass: the drafts are the
    ones without drafting, token for token, in no more forward passes."""
    text = ("def total(items):\n    result = 0\n    for item in items:\n        result += item.price\n"
            "    return result\n\n\n" * 3 + "def count(items):\n    result = 0\n    for ")
    runs = {}
    for d in ("none", draft):
        opts = InklingOptions().merged({"completion": {"decoder": decoder, "draft": d,
                                                       "max_new_tokens": 24}})
        engine = Engine(opts, runtime=wide_runtime)
        engine.open("file:///w/t.py", text)
        line = text.count("\n")
        runs[d] = engine.complete("file:///w/t.py", Position(line, 8), k=3, trigger="invoked")
    assert [x.text for x in runs[draft].drafts] == [x.text for x in runs["none"].drafts]
    assert runs[draft].forwards <= runs["none"].forwards


@pytest.mark.parametrize("decoder", ["branches", "sequential"])
def test_a_session_of_several_drafts_measures_drafting_against_plain_steps(wide_runtime,
                                                                           decoder):
    """Drafting with several branches is measured as with one (the lead's steps in
    `sequential`; in `branches` one step in explore_idle asks no drafter, a plain step):
    what steps cost by rows, drafted and plain steps a token. So the
    meter can find drafting dear there too, where it then idles."""
    text = ("def total(items):\n    result = 0\n    for item in items:\n"
            "        result += item.price\n    return result\n\n\n" * 3 +
            "def count(items):\n    result = 0\n    for ")
    opts = InklingOptions().merged({"completion": {"decoder": decoder, "draft": "suffix",
                                                   "max_new_tokens": 24}})
    engine = Engine(opts, runtime=wide_runtime)
    engine.open("file:///w/m.py", text)
    cost = engine.acceptance.cost
    for _ in range(6):
        engine.complete("file:///w/m.py", Position(text.count("\n"), 8), k=3,
                        trigger="invoked")
        if set(cost.arms) == {"plain", "drafted"}:
            break
    assert set(cost.arms) == {"plain", "drafted"}
    assert cost.plain_ms() is not None                          # steps timed by rows
    if decoder == "branches":                                   # a row a branch at least
        assert max(cost.ms) >= 2


def test_alternatives_follow_the_lead_drafts_lines():
    block = StopRule(True, "", indent=4)
    text = "x = 1\n    y = 2\n\n    z = 3\n"
    assert block.cut(text) is None                      # a block goes on to its dedent
    assert text[:block.capped(2).cut(text)] == "x = 1\n    y = 2"
    assert text[:block.capped(1).cut(text)] == "x = 1"
    assert block.capped(3).cut("x = 1\n    y = 2") is None
    line = StopRule(False, "")
    assert line.capped(3).cut("a\nb") == 1             # its own rule ends sooner
    assert line_count("") == 1 and line_count("a\nb") == 2


def test_an_alternative_cut_at_the_leads_length_ends_at_a_whole_word():
    assert at_word_end("return self._comp") == "return self."
    assert at_word_end("x = foo(a, ") == "x = foo(a,"
    assert at_word_end("value") == "value"                    # one word is kept whole
    assert at_word_end("    name") == "    name"
    lead = Decoded("a = 1", [4, 5, 6], -1.0, 3, "stop-rule")
    assert lead_budget(lead, 12) == 3
    assert lead_budget(Decoded("a", [4], -1.0, 1, "end-of-text"), 12) == 2   # EOS was a step
    assert lead_budget(Decoded("", [], 0.0, 0, "end-of-text"), 12) == 12      # no lead to follow


def test_superposed_scores_the_model_mixed_with_the_ngram_counts():
    """log(l * q + (1 - l) * p): q the counts after the longest match over all sources;
    where no source matches, log p."""
    from inkling.completion.drafting.suffix_index import SuffixIndex
    from inkling.completion.decoding.superposed import ngram_logprobs
    a, b = SuffixIndex(), SuffixIndex()
    a.put("x", [1, 2, 3, 4, 1, 2, 3, 5])                   # after 1 2 3: 4 once, 5 once
    b.put("y", [7, 1, 2, 3, 4])                            # and 4 once more
    p = torch.softmax(torch.arange(8, dtype=torch.float32), -1)
    got = ngram_logprobs({"a": a, "b": b}, [1, 2, 3], p, 0.7)
    q = torch.zeros(8)
    q[4], q[5] = 2 / 3, 1 / 3
    assert torch.allclose(got, torch.log(0.7 * q + 0.3 * p))
    assert torch.allclose(ngram_logprobs({"a": a}, [6, 6], p, 0.7), torch.log(p))


@pytest.mark.parametrize("text", PROMPTS)
def test_superposed_keeps_greedys_own_draft_as_its_lead(wide_runtime, text):
    """The n-gram mixed steps may steer every superposed draft off the model's best line
    (here a source that has the prompt followed by other tokens); greedy's own draft is
    still one of them, token for token, and leads (its extent caps the others)."""
    from inkling.completion.drafting.suffix_index import SuffixIndex
    from inkling.completion.decoding.superposed import superposed_decode
    rt, stop = wide_runtime, StopRule(True, "")
    ids = rt.encode(text)
    greedy = greedy_decode(_sure_request(rt, ids, [], 1, budget=10))
    steer = SuffixIndex()
    for n in range(3):
        steer.put(f"s{n}", ids + [(greedy.token_ids[0] + 1 + n) % rt.vocab_size] * 4)
    cache = PromptCache(rt, "full")
    r = DecodeRequest(cache, cache.sync(ids).logits, stop, 10, rt.stop_ids, rt.decode, k=3,
                      context=list(ids), sources={"steer": steer})
    outs, _ = superposed_decode(r)
    assert (outs[0].token_ids, outs[0].text) == (greedy.token_ids, greedy.text)
    assert math.isclose(outs[0].logprob, greedy.logprob, abs_tol=1e-4)
    assert len(outs) > 1 and all(o.token_ids != greedy.token_ids for o in outs[1:])
