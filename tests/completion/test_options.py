"""The options tree (completion/options.py): lists it keeps in step with the runtime's,
and bounds defined once beside each option."""
import pytest

from inkling.completion.decoding.plan import MAX_DRAFTS
from inkling.completion.errors import OptionError
from inkling.completion.options import FORWARDS, InklingOptions
from inkling.runtime.model_runtime import FORWARDS as RUNTIME_FORWARDS


def test_the_forwards_a_user_names_are_the_runtimes_but_captured():
    assert FORWARDS == tuple(f for f in RUNTIME_FORWARDS if f != "captured")


@pytest.mark.parametrize("key", ["drafts", "automaticDrafts"])
def test_the_draft_counts_end_at_the_plans_maximum(key):
    InklingOptions().merged({"completion": {key: MAX_DRAFTS}})
    with pytest.raises(OptionError, match=f"at most {MAX_DRAFTS}, got {MAX_DRAFTS + 1}"):
        InklingOptions().merged({"completion": {key: MAX_DRAFTS + 1}})
