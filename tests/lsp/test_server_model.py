"""`inkling/stats` says what the load chose (its `model` object), from the real `inkling serve`:
drafting not measured between the load and the preparation that times it, measured then, read
back from the cache at the next start; the log says the same in one line."""
import dataclasses
import shutil
import time

import pytest

from lsp_wire import Wire
from inkling.runtime.model_description import ModelDescription

pytestmark = pytest.mark.slow


def _model(w: Wire):
    return w.call("inkling/stats", {}, timeout=120)["result"]["model"]


def _first_model(w: Wire, timeout: float = 120) -> dict:
    """The first `model` a stats request answers: its job runs on the model worker right after
    the load, before the preparation's (which is queued only once the load has ended)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and w.proc.poll() is None:
        model = _model(w)
        if model is not None:
            return model
    raise AssertionError(f"no model in inkling/stats within {timeout} s: {w.stderr[-5:]}")


def test_stats_say_what_was_chosen_and_when_drafting_was_measured(tiny_model_dir, tmp_path):
    folder = shutil.copytree(tiny_model_dir, tmp_path / "m")    # nothing timed for it yet
    w = Wire(folder, ready=False)
    try:
        early = _first_model(w)
        assert (early["drafting"], early["drafting_state"]) == ("none", "not measured yet")
        assert "not measured yet" in early["drafting_reason"]
        assert w.wait_ready()
        model = _model(w)
        assert list(model) == [f.name for f in dataclasses.fields(ModelDescription)]
        assert (model["path"], model["family"], model["weights"]) == \
            (str(folder.resolve()), "llama", "float32")
        assert model["checkpoint_bytes"] == 4 * model["parameters"] > 0
        assert (model["fim"], model["fim_order"]) == ("inkling", "spm")
        assert model["drafting_state"] == "measured"
        assert "a forward of 16 rows costs" in model["drafting_reason"]
        stats = w.call("inkling/stats", {})["result"]
        assert stats["drafting"]["mode"] == model["drafting"]
        assert stats["forward"]["kind"] == model["forward"]
        said = [m for m in w.log_messages() if m.startswith(f"model {folder.resolve()}: llama")]
        assert len(said) == 1 and f"drafting {model['drafting']} (measured: " in said[0], said
    finally:
        w.kill()
    again = Wire(folder)
    try:
        model = _model(again)
        assert model["drafting_state"] == "cached" and "16 rows costs" in model["drafting_reason"]
    finally:
        again.kill()
