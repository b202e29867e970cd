"""The options tree (completion/options.py): lists it keeps in step with the runtime's,
and bounds defined once beside each option."""
import pytest

from inkling.completion.decoding.plan import MAX_DRAFTS
from inkling.completion.errors import OptionError
from inkling.completion.options import FORWARDS, InklingOptions
from inkling.runtime.forwards import FORWARDS as RUNTIME_FORWARDS


def test_a_user_names_any_forward_of_the_runtime_but_captured():
    for forward in RUNTIME_FORWARDS:
        if forward == "captured":
            with pytest.raises(OptionError, match="model.forward"):
                InklingOptions().merged({"model": {"forward": forward}})
        else:
            assert InklingOptions().merged({"model": {"forward": forward}}).model.forward == \
                forward
    assert set(FORWARDS) == set(RUNTIME_FORWARDS) - {"captured"}


@pytest.mark.parametrize("key", ["drafts", "automaticDrafts"])
def test_the_draft_counts_end_at_the_plans_maximum(key):
    InklingOptions().merged({"completion": {key: MAX_DRAFTS}})
    with pytest.raises(OptionError, match=f"at most {MAX_DRAFTS}, got {MAX_DRAFTS + 1}"):
        InklingOptions().merged({"completion": {key: MAX_DRAFTS + 1}})
