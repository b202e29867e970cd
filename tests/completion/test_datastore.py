"""The retrieval datastore: specs, the on-disk token cache, and drafting from it."""
import logging

import pytest

from inkling.completion.drafting.datastore import build_datastore, corpus_ids
from inkling.completion.drafting.datastore_specs import validate_datastore_spec
from inkling.completion.document import Position
from inkling.completion.engine import Engine
from inkling.completion.errors import OptionError
from inkling.completion.options import InklingOptions
from inkling.models.corpus import CorpusFile


def test_specs_are_checked_and_named_in_the_error(tmp_path):
    validate_datastore_spec("none")
    validate_datastore_spec("corpus")
    validate_datastore_spec(str(tmp_path))
    with pytest.raises(OptionError, match="nowhere-at-all"):
        validate_datastore_spec(str(tmp_path / "nowhere-at-all"))
    with pytest.raises(OptionError, match="completion.datastore"):
        InklingOptions().merged({"completion": {"datastore": "/no/such/folder"}})
    assert build_datastore("none", "{}", lambda texts: []) is None


def test_corpus_ids_are_cached_per_tokenizer_and_text(tmp_path, caplog):
    files = [CorpusFile("a.py", "x = 1\n"), CorpusFile("b.py", "def f():\n    pass\n")]
    calls = []

    def encode_batch(texts):
        calls.append(len(texts))
        return [[ord(c) for c in t] for t in texts]
    ids, cached = corpus_ids(files, "tok-1", encode_batch, None, tmp_path)
    assert not cached and [list(x) for x in ids] == [[ord(c) for c in f.text] for f in files]
    again, cached = corpus_ids(files, "tok-1", encode_batch, None, tmp_path)
    assert cached and calls == [2] and [list(x) for x in again] == [list(x) for x in ids]
    corpus_ids(files, "tok-2", encode_batch, None, tmp_path)          # another tokenizer
    corpus_ids([files[0], CorpusFile("b.py", "y = 2\n")], "tok-1", encode_batch, None, tmp_path)
    assert calls == [2, 2, 2]
    for p in tmp_path.glob("corpus-*.npz"):
        p.write_bytes(b"not an npz")                                  # a damaged cache
    with caplog.at_level(logging.WARNING, logger="inkling.datastore"):
        ids, cached = corpus_ids(files, "tok-1", encode_batch, None, tmp_path)
    assert not cached and "unreadable" in caplog.text and len(ids) == 2


def test_a_folder_datastore_drafts_and_decoding_stays_lossless(tiny_runtime, tmp_path):
    """Code in the datastore folder is drafted (fewer forwards) and the suggestion is the
    one greedy decoding gives without it."""
    store = tmp_path / "store"
    store.mkdir()
    body = "def mean(values):\n    total = sum(values)\n    return total / len(values)\n"
    (store / "stats.py").write_text(body * 3)
    text = "import os\n\n\ndef mean(values):\n    total = sum(values)\n    return "
    uri = "file:///w/c.py"
    outs = {}
    for spec in ("none", str(store)):
        engine = Engine(InklingOptions().merged({"completion": {
            "draft": "suffix", "datastore": spec, "max_new_tokens": 12}}), runtime=tiny_runtime)
        assert (engine.build_datastore() is None) == (spec == "none")
        engine.open(uri, text)
        outs[spec] = engine.complete(uri, Position(5, 11))
    greedy = Engine(InklingOptions().merged({"completion": {"max_new_tokens": 12}}),
                    runtime=tiny_runtime)
    greedy.open(uri, text)
    want = greedy.complete(uri, Position(5, 11)).drafts[0].text
    assert outs["none"].drafts[0].text == outs[str(store)].drafts[0].text == want
    assert "datastore" in engine.sources.datastore.summary()
    ctx = tiny_runtime.encode("def mean(values):\n    total = sum(")
    assert engine.sources.datastore.matches(ctx)                            # the folder's code is there


def test_superposed_decoding_takes_ngram_counts_from_the_datastore(tiny_runtime, tmp_path):
    store = tmp_path / "store"
    store.mkdir()
    (store / "lib.py").write_text("value = compute_total(items_in_stock, 3)\n" * 5)
    uri = "file:///w/d.py"
    text = "import os\n\n\nvalue = compute_total("
    drafts = {}
    for spec in ("none", str(store)):
        engine = Engine(InklingOptions().merged({"completion": {
            "decoder": "superposed", "datastore": spec, "max_new_tokens": 8}}),
            runtime=tiny_runtime)
        assert engine.uses_datastore == (spec != "none")
        engine.build_datastore()
        engine.open(uri, text)
        drafts[spec] = [d.text for d in engine.complete(uri, Position(3, 22), k=3).drafts]
    assert any(d.startswith("items") for d in drafts[str(store)]), drafts
    assert not any(d.startswith("items") for d in drafts["none"]), drafts
