"""The document's cache in step after every decoder with every forward a model runs: after an
invoked completion each layer of the store holds one entry per cached id, and the next
completion at the same place prefills only what changed (no "recomputing (full)")."""
import logging

import pytest

from inkling.completion.decoding.names import Decoder, Trigger
from inkling.completion.document import Position, Range, TextChange
from inkling.completion.engine import Engine
from inkling.completion.options import InklingOptions
from inkling.runtime import native_llama
from inkling.runtime.model_loader import load_runtime

from zoo_models import zoo_model

URI = "file:///ws/shapes.py"
TEXT = ("import math\n\n\nclass Circle:\n    def __init__(self, radius):\n"
        "        self.radius = radius\n\n    def area(self):\n        return math.pi * \n\n"
        "    def perimeter(self):\n        return 2 * math.pi * self.radius\n\n\n"
        "def largest(circles):\n    return max(circles, key=lambda c: c.area())\n")
CURSOR = Position(8, 25)                   # after "return math.pi * "
# (model, forward): the bundled model and a zoo Llama by each forward, a zoo Qwen by the
# two it runs (native has no attention biases), StarCoder2 by transformers' alone
CASES = [("bundled", f) for f in ("reference", "compact", "native")] + \
    [("deepseek-coder-1.3b-base", f) for f in ("reference", "compact", "native")] + \
    [("qwen2.5-coder-0.5b", f) for f in ("reference", "compact")] + \
    [("starcoder2-3b", "reference")]
_RUNTIMES = {}


@pytest.fixture()
def runtime_of(request):
    def load(name):
        if name not in _RUNTIMES:
            path = request.getfixturevalue("bundled_model_dir") if name == "bundled" \
                else zoo_model(name)
            _RUNTIMES[name] = load_runtime(path, device="cpu", dtype="float32")
        return _RUNTIMES[name]
    return load


def _held(cache) -> set[int]:
    """The entries each layer of ``cache``'s store holds, and the ids it records."""
    return {layer.keys.shape[-2] for layer in cache.past.layers} | {len(cache.ids)}


def _every_layer_in_step(cache) -> bool:
    return cache.consistent() and len(_held(cache)) == 1


@pytest.mark.parametrize("decoder", list(Decoder))
@pytest.mark.parametrize("name,forward", CASES)
def test_cache_stays_in_step_after_an_invoked_completion(runtime_of, caplog, name, forward,
                                                         decoder):
    if forward == "native" and not native_llama.built():
        pytest.skip("the native forward is not built here (inkling build-native)")
    runtime = runtime_of(name)
    options = InklingOptions().merged({"model": {"forward": forward},
                                       "completion": {"decoder": decoder, "draft": "none"}})
    engine = Engine(options, runtime=runtime)
    engine.open(URI, TEXT)
    with caplog.at_level(logging.WARNING, logger="inkling.cache"):
        first = engine.complete(URI, CURSOR, trigger=Trigger.INVOKED)
        cache = engine._caches.of(URI, runtime, engine.options)
        assert cache.forward.name == forward
        assert _every_layer_in_step(cache), (len(cache.ids), _held(cache))
        again = engine.complete(URI, CURSOR, trigger=Trigger.INVOKED)
        assert again.prefill_tokens == 1 and again.reused_tokens == first.prefill_tokens - 1
        assert _every_layer_in_step(cache)
        engine.apply_change(URI, [TextChange("2", Range(CURSOR, CURSOR))])
        typed = engine.complete(URI, Position(CURSOR.line, CURSOR.character + 1),
                                trigger=Trigger.INVOKED)
        assert 1 <= typed.prefill_tokens <= 4 < typed.reused_tokens
        assert _every_layer_in_step(cache)
    assert not [r.message for r in caplog.records if "recomputing" in r.message]
