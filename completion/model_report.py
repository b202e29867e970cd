"""What the Engine's load chose (runtime/model_description.py), drafting as it stands, read
from ``draft_mode.in_use``, which runs no forward."""
from __future__ import annotations

from inkling.runtime.model_description import ModelDescription, describe
from inkling.runtime.model_runtime import ModelRuntime

from inkling.completion.decoding.names import DraftMode
from inkling.completion.drafting.draft_mode import in_use
from inkling.completion.options import InklingOptions

FORCED = "forced"        # completion.draft names the mode: nothing is measured for it


def drafting_state(options: InklingOptions, runtime: ModelRuntime,
                   prior: float) -> tuple[str, str, str]:
    """(the drafting that runs, its state, why)."""
    about = in_use(options, runtime, prior)
    forced = DraftMode(options.completion.draft) != DraftMode.AUTO
    return (DraftMode(about["mode"]).value, FORCED if forced else str(about["state"]),
            about["reason"])


def model_description(options: InklingOptions, runtime: ModelRuntime,
                      prior: float) -> ModelDescription:
    """``runtime`` as ``options`` run it: the forward they ask for, drafting as it stands."""
    return describe(runtime, options.model.forward, drafting_state(options, runtime, prior))
