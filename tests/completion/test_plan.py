"""The decode plan (completion/decoding/plan.py): the one rule for the decoder that runs,
the drafts asked for, and what a plan decides from the options and the cursor."""
import pytest

from inkling.completion.decoding.plan import MAX_DRAFTS, decoder_for, drafts_asked, plan_for
from inkling.completion.decoding.stop_rules import StopRule
from inkling.completion.errors import OptionError
from inkling.completion.options import DECODERS, CompletionOptions, InklingOptions


@pytest.mark.parametrize("decoder", DECODERS)
def test_one_draft_is_greedy_but_for_an_invoked_beam_search(decoder):
    assert decoder_for(decoder, 1, "automatic") == "greedy"
    assert decoder_for(decoder, 1, "invoked") == ("beam" if decoder == "beam" else "greedy")
    assert decoder_for(decoder, 3, "automatic") == decoder_for(decoder, 3, "invoked") == decoder


def test_the_drafts_asked_follow_the_trigger_and_stay_in_bounds():
    c = CompletionOptions(drafts=5, automatic_drafts=2)
    assert (drafts_asked(c, "invoked"), drafts_asked(c, "automatic")) == (5, 2)
    assert drafts_asked(c, "automatic", 7) == 7
    for k in (0, MAX_DRAFTS + 1):
        with pytest.raises(OptionError, match=f"between 1 and {MAX_DRAFTS}, got {k}"):
            drafts_asked(c, "invoked", k)


def test_a_plan_takes_the_block_budget_and_width_in_a_block():
    c = CompletionOptions(decoder="beam", beam_width=6, block_beam_width=3, reread_lines=2)
    line, block = (plan_for(c, "invoked", 2, StopRule(b, "")) for b in (False, True))
    assert (line.budget, line.width, line.rereads) == (c.max_new_tokens, 6, 6)
    assert (block.budget, block.width, block.rereads) == (c.max_block_tokens, 3, 3)
    assert not line.drafting and not line.one and block.block
    assert plan_for(CompletionOptions(decoder="beam", reread_lines=0), "invoked", 2,
                    StopRule(False, "")).rereads == 0                  # rereading off


def test_one_draft_drafts_whatever_decoder_is_named():
    for decoder in DECODERS:
        plan = plan_for(CompletionOptions(decoder=decoder), "automatic", 1, StopRule(False, ""))
        assert plan.one and plan.drafting and plan.rereads == 0
    multi = plan_for(CompletionOptions(decoder="superposed"), "invoked", 3, StopRule(False, ""))
    assert not multi.drafting and multi.decoder == "superposed"


def test_the_mechanisms_name_the_plans_decoder():
    for decoder in DECODERS:
        for drafts in (1, 3):
            o = InklingOptions().merged({"completion": {"decoder": decoder, "drafts": drafts}})
            assert o.mechanisms()["decoder"] == decoder_for(decoder, drafts, "invoked")
