"""The alternatives of several drafts: a length floor, sampled continuations and pruning
(completion.alternative_min_tokens / alternative_temperature / alternative_prune)."""
import math
from dataclasses import replace

import pytest
import torch

from inkling.cache.prompt_cache import PromptCache
from inkling.completion.decoding.branches import (at_word_end, branch_decode, first_tokens,
                                                  lead_budget, next_token,
                                                  sequential_decode)
from inkling.completion.decoding.greedy import greedy_decode
from inkling.completion.decoding.ranking import UNLIKELY, worth_showing
from inkling.completion.decoding.request import DecodeRequest, seeded
from inkling.completion.decoding.steps import Decoded
from inkling.completion.decoding.stop_rules import StopRule, line_count
from inkling.completion.decoding.superposed import superposed_decode
from inkling.completion.document import Position
from inkling.completion.engine import Engine
from inkling.completion.errors import OptionError
from inkling.completion.options import InklingOptions

from conftest import PROMPTS  # the wide_runtime fixture too (the same prompts and model)


def _request(rt, ids, stop, budget, k, **kw):
    cache = PromptCache(rt, "full")
    return DecodeRequest(cache, cache.sync(ids).logits, stop, budget, rt.stop_ids, rt.decode,
                         k=k, **kw)


def _alone(rt, ids, first, stop, budget):
    forced = torch.full((rt.vocab_size,), float("-inf"))
    forced[first] = 0.0
    return greedy_decode(replace(_request(rt, ids, stop, budget, 1), logits=forced))


def _logprob(rt, ids, continuation):
    """The model's log-probability of ``continuation`` after ``ids``, one sequence, no cache."""
    with torch.no_grad():
        out = rt.model(torch.tensor([ids + continuation])).logits[0].float()   # [n, vocab]
    logp = torch.log_softmax(out, -1)
    return sum(float(logp[len(ids) - 1 + i, t]) for i, t in enumerate(continuation))


@pytest.mark.parametrize("text", PROMPTS)
def test_a_length_floor_lets_alternatives_run_past_the_leads_tokens(wide_runtime, text):
    """With ``floor`` the alternatives are the greedy continuations of their first tokens
    within the lead's lines and max(lead's tokens, floor) tokens; sequential agrees."""
    rt, stop, floor = wide_runtime, StopRule(True, ""), 9
    ids = rt.encode(text)
    outs, _ = branch_decode(_request(rt, ids, stop, 16, 3, floor=floor))
    seq, _ = sequential_decode(_request(rt, ids, stop, 16, 3, floor=floor))
    assert [o.token_ids for o in outs] == [o.token_ids for o in seq]
    for b, s in zip(outs, seq):                 # ranked alike: by the lead's extent, if past it
        assert (b.score is None) == (s.score is None)
        assert b.score is None or math.isclose(b.score, s.score, abs_tol=1e-4)
        assert math.isclose(b.logprob, s.logprob, abs_tol=1e-4)
        assert len(b.lps) == len(s.lps) == len(b.token_ids)
        assert all(math.isclose(x, y, abs_tol=1e-4) for x, y in zip(b.lps, s.lps))
    extent = lead_budget(outs[0], 16)
    for out in outs[1:]:
        if len(out.token_ids) > extent:
            assert math.isclose(out.score, sum(out.lps[:extent]) / extent)
        else:
            assert out.score is None
    lead = stop.capped(line_count(outs[0].text))
    budget = lead_budget(outs[0], 16, floor)
    assert budget >= min(floor, 16) or not outs[0].token_ids
    firsts = first_tokens(_request(rt, ids, stop, 16, 3).logits, 3)
    for (tok, _), out in zip(firsts[1:], outs[1:]):
        alone = _alone(rt, ids, tok, lead, budget)
        if out.stopped_by == "lead-extent":
            assert out.text == at_word_end(alone.text)
        else:
            assert out.text == alone.text


def test_the_floor_changes_nothing_where_the_lead_is_longer():
    lead = Decoded("a = b + c", [4, 5, 6, 7, 8], -1.0, 5, "stop-rule")
    assert lead_budget(lead, 12, 3) == 5 and lead_budget(lead, 12, 8) == 8
    assert lead_budget(lead, 6, 8) == 6                       # never past the budget


@pytest.mark.parametrize("decoder", [branch_decode, superposed_decode])
def test_sampled_alternatives_keep_the_lead_and_their_true_scores(wide_runtime, decoder):
    """At a temperature the lead draft is greedy's; each alternative's log-probability is
    the model's for its tokens (the tree-batched forward scores sampled tokens right); the
    same seed samples the same drafts; and at temperature 2 some alternative differs from
    the greedy one."""
    rt, stop = wide_runtime, StopRule(True, "")
    differs = 0
    for text in PROMPTS:
        ids = rt.encode(text)
        greedy, _ = decoder(_request(rt, ids, stop, 10, 3))
        hot, _ = decoder(_request(rt, ids, stop, 10, 3, temperature=2.0,
                                  generator=seeded(ids)))
        again, _ = decoder(_request(rt, ids, stop, 10, 3, temperature=2.0,
                                    generator=seeded(ids)))
        assert [o.token_ids for o in hot] == [o.token_ids for o in again]
        assert hot[0].token_ids == greedy[0].token_ids and hot[0].text == greedy[0].text
        for out in hot[1:]:           # an end of text drawn after the first token: not scored
            if out.token_ids:
                expected = _logprob(rt, ids, out.token_ids)
                assert math.isclose(out.logprob, expected, abs_tol=1e-3), (out, expected)
        differs += [o.token_ids for o in hot[1:]] != [o.token_ids for o in greedy[1:]]
    assert differs >= 2


def test_next_token_is_argmax_at_zero_and_draws_by_probability_above():
    logits = torch.log(torch.tensor([0.2, 0.7, 0.1]))
    g = torch.Generator().manual_seed(5)
    assert next_token(logits, 0.0, g) == 1
    draws = [next_token(logits, 1.0, g) for _ in range(3000)]
    assert abs(draws.count(1) / 3000 - 0.7) < 0.04 and abs(draws.count(2) / 3000 - 0.1) < 0.03
    masked = torch.tensor([float("-inf"), 0.0, float("-inf")])
    assert {next_token(masked, 1.5, g) for _ in range(50)} == {1}   # a masked one is never drawn
    nothing = torch.full((3,), float("-inf"))                       # the monitor allowed none
    assert next_token(nothing, 1.0, g) == int(torch.argmax(nothing))


def test_pruning_leaves_out_alternatives_far_below_the_lead():
    texts = ["return x", "return y + 1", "raise ValueError"]
    per_token = [-0.5, -1.2, -3.0]
    assert worth_showing(texts, per_token, 0.0)[0] == [0, 1, 2]          # off
    kept, dropped = worth_showing(texts, per_token, 2.0)
    assert kept == [0, 1] and [(d.rank, d.reason, d.like) for d in dropped] == [(2, UNLIKELY, 0)]
    assert worth_showing(["x"], [-9.0], 0.1)[0] == [0]                   # a lone draft stays


def test_the_engine_applies_the_three_options(wide_runtime):
    text = PROMPTS[0] + "\n"
    runs = {}
    for name, over in (("plain", {}), ("floor", {"alternative_min_tokens": 12}),
                       ("hot", {"alternative_temperature": 1.5}),
                       ("pruned", {"alternative_prune": 0.01})):
        # the monitor off: this is about the alternatives' options; the syntax guard (tested
        # on its own) may shorten the random model's lead differently from run to run
        opts = InklingOptions().merged({"completion": {"decoder": "branches", "draft": "none",
                                                       "monitor": "off",
                                                       "max_new_tokens": 16, **over}})
        engine = Engine(opts, runtime=wide_runtime)
        engine.open("file:///w/a.py", text)
        runs[name] = engine.complete("file:///w/a.py", Position(1, 11), k=3, trigger="invoked")
    lead = runs["plain"].drafts[0].text          # greedy's draft is decoded by every run
    assert runs["pruned"].drafts[0].text == lead
    for r in runs.values():                     # (ranked by log-probability a token)
        assert lead in [d.text for d in r.drafts] + [d.text for d in r.dropped]
    assert runs["floor"].forwards >= runs["plain"].forwards
    assert len(runs["pruned"].drafts) <= len(runs["plain"].drafts)
    assert all(d.reason in (UNLIKELY, "strict prefix of another draft", "shorter than a word",
                            "duplicate", "whitespace-only variant", "empty")
               for d in runs["pruned"].dropped)


@pytest.mark.parametrize("over, message", [
    ({"alternative_temperature": 2.5}, "alternative_temperature must be between 0 and 2"),
    ({"alternative_temperature": 0.8, "decoder": "sequential"}, "needs completion.decoder"),
    ({"alternative_prune": -1.0}, "alternative_prune must be at least 0"),
    ({"alternative_min_tokens": -3}, "alternative_min_tokens must be at least 0"),
])
def test_bad_alternative_options_are_named(over, message):
    with pytest.raises(OptionError, match=message):
        InklingOptions().merged({"completion": over}).validate()
