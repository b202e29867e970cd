"""Beam search (completion/decoding/beam.py): its drafts' scores are their own tokens'
log-probabilities, width 1 is greedy decoding, and it keeps the monitor's rules."""
from dataclasses import replace

import pytest
import torch

from inkling.cache.prompt_cache import PromptCache
from inkling.completion.decoding.beam import LENGTH_PENALTY, beam_decode, ranked
from inkling.completion.decoding.greedy import greedy_decode
from inkling.completion.decoding.request import DecodeRequest
from inkling.completion.decoding.steps import Cancelled
from inkling.completion.decoding.stop_rules import StopRule
from inkling.completion.document import Position
from inkling.completion.engine import Engine
from inkling.completion.errors import OptionError
from inkling.completion.options import InklingOptions

from conftest import PROMPTS


def _request(rt, text, k=1, width=4, budget=10, stop=StopRule(True, ""), **kw):
    cache = PromptCache(rt, "full")
    return DecodeRequest(cache, cache.sync(rt.encode(text)).logits, stop, budget, rt.stop_ids,
                         rt.decode, k=k, width=width, **kw)


def _sequence_logprob(rt, prompt_ids, ids):
    """The log-probability of ``ids`` after the prompt, one plain causal forward."""
    cache = PromptCache(rt, "full")
    first = cache.sync(prompt_ids).logits
    rows = torch.cat((first[None], cache.extend(ids[:-1]))) if len(ids) > 1 else first[None]
    logp = torch.log_softmax(rows.float(), -1)                       # [len(ids), vocab]
    return float(sum(logp[i, t] for i, t in enumerate(ids)))


@pytest.mark.parametrize("text", PROMPTS)
def test_each_draft_scores_its_own_tokens_as_a_plain_forward_does(wide_runtime, text):
    rt = wide_runtime
    r = _request(rt, text, k=4, width=4)
    prompt = len(r.cache.ids)
    outs, forwards = beam_decode(r)
    assert outs and forwards <= 10 and len(r.cache.ids) == prompt     # the prompt, only
    for d in outs:                 # an end of text counts its stop token's log-probability
        ends = [[s] for s in rt.stop_ids] if d.stopped_by == "end-of-text" else [[]]
        assert any(d.logprob == pytest.approx(
            _sequence_logprob(rt, rt.encode(text), d.token_ids + end), abs=2e-3) for end in ends)
        assert d.score == pytest.approx(d.logprob / max(1, len(d.token_ids)) ** LENGTH_PENALTY)
        assert d.text == rt.decode(d.token_ids)[:len(d.text)]
    assert [d.score for d in outs] == sorted((d.score for d in outs), reverse=True)


@pytest.mark.parametrize("text", PROMPTS)
def test_width_one_is_greedy_decoding(wide_runtime, text):
    rt = wide_runtime
    beam, _ = beam_decode(_request(rt, text, width=1))
    greedy = greedy_decode(_request(rt, text))
    assert beam[0].token_ids == greedy.token_ids and beam[0].text == greedy.text


def test_a_wider_beam_finds_a_draft_ranked_no_lower(wide_runtime):
    rt = wide_runtime
    for text in PROMPTS:
        narrow, _ = beam_decode(_request(rt, text, width=1, budget=6))
        wide, _ = beam_decode(_request(rt, text, width=8, budget=6))
        # not a theorem of beam search, but of these prompts: the wide one kept greedy's path
        # or found a better one
        assert wide[0].score >= narrow[0].score - 1e-4


class _Only:
    """A monitor that allows one token at step 0 and every token after it."""

    def __init__(self, tok, vocab, step=0):
        self.tok, self.vocab, self.step = tok, vocab, step

    def mask(self, device):
        if self.step:
            return None
        allowed = torch.zeros(self.vocab, dtype=torch.bool, device=device)
        allowed[self.tok] = True
        return allowed

    def advance_token(self, tok):
        return _Only(self.tok, self.vocab, self.step + 1)


def test_every_hypothesis_keeps_to_the_monitor(wide_runtime):
    rt = wide_runtime
    r = _request(rt, PROMPTS[0], k=3)
    unlikely = int(torch.argsort(r.logits)[len(r.logits) // 2])      # a middling token
    outs, _ = beam_decode(replace(r, monitor=_Only(unlikely, rt.vocab_size)))
    assert outs and all(d.token_ids[:1] == [unlikely] for d in outs)


def test_a_cancelled_search_raises_and_leaves_the_prompt(wide_runtime):
    rt = wide_runtime
    r = _request(rt, PROMPTS[1], width=4, cancelled=lambda: True)
    prompt = len(r.cache.ids)
    with pytest.raises(Cancelled):
        beam_decode(r)
    assert len(r.cache.ids) == prompt


def test_the_engine_decodes_one_or_several_drafts_by_beam_search(wide_runtime):
    e = Engine(InklingOptions().merged({"completion": {"decoder": "beam", "draft": "none",
                                                        "monitor": "off"}}),
               runtime=wide_runtime)
    e.open("file:///a.py", PROMPTS[0] + "\n")
    at = Position(1, len("    return "))
    one = e.complete("file:///a.py", at, k=1, trigger="invoked")
    three = e.complete("file:///a.py", at, k=3, trigger="invoked")
    assert len(one.drafts) == 1 and one.drafts[0].text == three.drafts[0].text
    texts = [d.text.rstrip() for d in three.drafts]
    # how many differ is the random model's (2 or 3 here; torch 2.11's initialisation on the
    # GPU machine gave fewer): they are distinct, and the shortfall says why any is missing
    assert 1 <= len(texts) <= 3 and len(set(texts)) == len(texts)
    assert len(texts) == 3 or three.shortfall


def test_a_beam_narrower_than_one_or_wider_than_sixteen_is_refused():
    for width in (0, 17):
        with pytest.raises(OptionError, match="completion.beam_width"):
            InklingOptions().merged({"completion": {"beamWidth": width}})
    assert ranked(-4.0, 4) == pytest.approx(-4.0 / 4 ** LENGTH_PENALTY)
