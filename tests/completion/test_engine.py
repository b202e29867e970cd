import pytest

from inkling.completion.document import Position, Range, TextChange
from inkling.completion.engine import Engine
from inkling.completion.errors import DocumentError, OptionError
from inkling.completion.options import InklingOptions
from inkling.completion.decoding.steps import Cancelled

URI = "file:///ws/a.py"


@pytest.fixture()
def engine(tiny_runtime):
    return Engine(InklingOptions(), runtime=tiny_runtime)


def test_complete_returns_one_draft_with_timings(engine):
    engine.open(URI, "def add(a, b):\n    return \n")
    result = engine.complete(URI, Position(1, 11))
    assert len(result.drafts) == 1 and "\n" not in result.drafts[0].text
    assert result.prefill_tokens > 0 and result.latency_ms >= result.first_token_ms > 0
    assert result.forwards >= 1 and result.model_ms > 0


def test_second_completion_reuses_the_cache(engine):
    engine.open(URI, "import os\n\ndef main():\n    x = \n")
    first = engine.complete(URI, Position(3, 8))
    engine.apply_change(URI, [TextChange("o", Range(Position(3, 8), Position(3, 8)))])
    second = engine.complete(URI, Position(3, 9))
    assert first.reused_tokens == 0
    assert second.reused_tokens > 0 and second.prefill_tokens < first.prefill_tokens


def test_a_closed_document_gives_up_its_cache(engine):
    """The KV caches' budget is the open documents': a closed one's cache is freed at once,
    not held until other documents' caches push it out."""
    engine.open(URI, "import os\n\ndef main():\n    x = \n")
    engine.open("file:///ws/b.py", "y = 1\n")
    engine.complete(URI, Position(3, 8))
    engine.complete("file:///ws/b.py", Position(0, 4))
    assert sorted(engine._caches.keys()) == ["file:///ws/a.py", "file:///ws/b.py"]
    engine.close(URI)
    assert engine._caches.keys() == ["file:///ws/b.py"]


def test_another_prompt_order_starts_from_an_empty_cache(engine):
    """Every cached prompt is another text in the other order: reusing its entries (pie
    re-rotates what moved) would make a completion depend on the order used before it."""
    engine.open(URI, "import os\n\ndef main():\n    x = \n")
    engine.complete(URI, Position(3, 8))
    engine.configure({"completion": {"fim_order": "psm"}})
    after = engine.complete(URI, Position(3, 8))
    assert after.reused_tokens == 0
    fresh = Engine(engine.options, runtime=engine.load_model())
    fresh.open(URI, "import os\n\ndef main():\n    x = \n")
    assert [d.text for d in fresh.complete(URI, Position(3, 8)).drafts] == \
        [d.text for d in after.drafts]
    engine.configure({"completion": {"drafts": 2}})             # nothing that moves a prompt
    assert engine.complete(URI, Position(3, 8)).reused_tokens > 0


def test_crlf_document_gets_crlf_suggestion(engine):
    engine.open(URI, "def f():\r\n")
    engine.options.completion.max_block_tokens = 12
    result = engine.complete(URI, Position(0, 8))
    assert result.block
    text = result.drafts[0].text
    assert "\n" not in text.replace("\r\n", "")


def test_greedy_gives_one_draft_whatever_k(engine):
    engine.configure({"completion": {"decoder": "greedy"}})    # the default is superposed
    engine.open(URI, "x = 1\n")
    assert len(engine.complete(URI, Position(0, 5), k=3).drafts) == 1
    with pytest.raises(OptionError, match="between 1 and 16"):
        engine.complete(URI, Position(0, 5), k=0)


def test_unknown_document_and_bad_position(engine):
    with pytest.raises(DocumentError, match="unknown document file:///nowhere.py"):
        engine.complete("file:///nowhere.py", Position(0, 0))
    engine.open(URI, "x = 1\n")
    with pytest.raises(DocumentError, match="line 9 is out of range"):
        engine.complete(URI, Position(9, 0))
    assert engine.document(URI).text == "x = 1\n"


def test_cancellation_stops_between_forward_passes(engine):
    engine.open(URI, "def f():\n    return \n")
    calls = []

    def cancelled():
        calls.append(1)
        return True
    engine.options.completion.max_new_tokens = 40
    with pytest.raises(Cancelled):
        # a random model rarely ends a line at once; retry positions until one decodes
        for col in range(0, 11):
            engine.complete(URI, Position(1, col), cancelled=cancelled)
    assert calls


def test_accept_counts(engine):
    engine.open(URI, "x = \n")
    draft = engine.complete(URI, Position(0, 4)).drafts[0]
    assert engine.accept(draft.id) == draft and engine.stats.accepted == 1
    with pytest.raises(DocumentError, match="unknown draft id"):
        engine.accept("nope")


def test_options_validation_keeps_previous_values(engine):
    before = engine.options
    with pytest.raises(OptionError, match="completion.max_new_tokens must be an integer"):
        engine.configure({"completion": {"maxNewTokens": "many"}})
    with pytest.raises(OptionError, match="unknown option 'completion.colour'"):
        engine.configure({"completion": {"colour": 1}})
    with pytest.raises(OptionError, match="completion.monitor must be one of off, on"):
        engine.configure({"completion": {"monitor": "maybe"}})
    with pytest.raises(OptionError, match="cache.mode must be one of full, pie, naive"):
        engine.configure({"cache": {"mode": "fast"}})
    with pytest.raises(OptionError, match="model.threads must be 0"):
        engine.configure({"model": {"threads": -2}})
    assert engine.options is before
    engine.configure({"completion": {"maxNewTokens": 7}})
    assert engine.options.completion.max_new_tokens == 7


def test_idle_gives_the_heap_back(engine, monkeypatch):
    """After a completion, idle time returns what its temporaries freed but the heap kept."""
    import inkling.completion.engine as engine_module
    given = []
    monkeypatch.setattr(engine_module, "give_back", lambda: given.append(True))
    engine.open(URI, "def add(a, b):\n    return \n")
    engine.complete(URI, Position(1, 11))
    assert not given                          # never inside a completion's answer
    engine.idle(engine.options.cache.idle_refresh_ms)
    assert given == [True]
