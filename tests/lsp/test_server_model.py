"""`inkling/stats` says what the load chose (its `model` object), from the real `inkling serve`,
and drafting's first timing never holds a completion up: the server is ready with drafting not
measured yet, answers a completion sent right after initialization, then times the forwards
between completions, says "measured", and reads it back from the cache at the next start."""
import dataclasses
import shutil

import pytest

from lsp_wire import Wire
from inkling.lsp.model_loading import TIMING_LINE
from inkling.runtime.model_description import ModelDescription

pytestmark = pytest.mark.slow

URI = "file:///tmp/inkling-draft-timing.py"
TEXT = "def add(a, b):\n    return "
TIMING = TIMING_LINE


def _model(w: Wire):
    return w.call("inkling/stats", {}, timeout=120)["result"]["model"]


def _first(events: list[tuple[str, dict]], found) -> int:
    """The index of the first notification ``found`` accepts (an AssertionError if none)."""
    at = next((i for i, (method, params) in enumerate(events) if found(method, params)), None)
    assert at is not None, [e for e in events if e[0] != "$/progress"]
    return at


def _log(prefix: str):
    return lambda method, params: method == "window/logMessage" and \
        params["message"].startswith(prefix)


def test_a_completion_does_not_wait_for_drafting_timing_and_stats_say_measured(
        tiny_model_dir, tmp_path):
    folder = shutil.copytree(tiny_model_dir, tmp_path / "m")    # nothing timed for it yet
    landed = f"model {folder.resolve()}: drafting "
    w = Wire(folder, ready=False)
    try:
        w.open(URI, TEXT)                                        # during the load
        answer = w.wait(w.inline(URI, 1, 11), 120)
        assert "result" in answer, answer
        assert w.wait_for(lambda: any(m.startswith(landed) for m in w.log_messages()), 120), \
            w.stderr[-5:]
        events = [(n["method"], n["params"]) for n in list(w.notifications)]
        answered = _first(events, lambda method, params: method == "inkling/status" and
                          params["message"].endswith("draft(s)"))
        loaded = _first(events, _log(f"model {folder.resolve()}: llama"))
        ready = _first(events, lambda method, params: method == "inkling/status" and
                       params["state"] == "ready" and params["message"].startswith("model "))
        timing, measured = _first(events, _log(TIMING)), _first(events, _log(landed))
        assert answered < timing and loaded < ready < timing < measured
        line = events[loaded][1]["message"]
        assert "drafting none (not measured yet: " in line and line.endswith(" loaded"), line
        model = _model(w)
        assert list(model) == [f.name for f in dataclasses.fields(ModelDescription)]
        assert (model["path"], model["family"], model["weights"]) == \
            (str(folder.resolve()), "llama", "float32")
        assert model["checkpoint_bytes"] == 4 * model["parameters"] > 0
        assert (model["fim"], model["fim_order"]) == ("inkling", "spm")
        assert model["drafting_state"] == "measured"
        assert "a forward of 16 rows costs" in model["drafting_reason"]
        assert events[measured][1]["message"] == \
            f"{landed}{model['drafting']} (measured: {model['drafting_reason']})"
        stats = w.call("inkling/stats", {})["result"]
        assert stats["drafting"]["mode"] == model["drafting"]
        assert stats["forward"]["kind"] == model["forward"]
        assert stats["answered"] == 1 and not w.tracebacks()
    finally:
        w.kill()
    again = Wire(folder)
    try:
        model = _model(again)           # answered after the check that finds the timing kept
        assert model["drafting_state"] == "cached" and "16 rows costs" in model["drafting_reason"]
        assert TIMING not in again.log_messages()
    finally:
        again.kill()
