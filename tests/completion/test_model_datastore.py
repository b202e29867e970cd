"""The model datastore: the model's own continuations, built batched, stored with the
model's fingerprint, refused for other weights, and drafted from."""
import logging
import subprocess
import sys

import numpy as np
import pytest
import torch

from inkling.completion.drafting import model_datastore as md
from inkling.completion.document import Position
from inkling.completion.engine import Engine
from inkling.completion.errors import OptionError
from inkling.completion.options import InklingOptions
from inkling.completion.drafting.suffix_drafter import SuffixDrafter


def _sequences(runtime):
    from inkling.models.corpus import stdlib_root
    root = stdlib_root()
    return [np.asarray(runtime.encode((root / n).read_text()), np.int32)
            for n in ("textwrap.py", "bisect.py")]


def _line_ends(runtime):
    tok = runtime.tokenizer
    return frozenset(i for i in range(tok.get_vocab_size()) if "\n" in tok.decode([i]))


def _greedy(runtime, prompt: list[int], n: int) -> list[int]:
    """Greedy decoding of one unpadded prompt, the whole sequence each step."""
    ids = list(prompt)
    with torch.inference_mode():
        for _ in range(n):
            logits = runtime.model(input_ids=torch.tensor([ids])).logits[0, -1]
            ids.append(int(torch.argmax(logits)))
    return ids[len(prompt):]


def test_line_of_stops_after_the_first_line_that_has_text():
    ends, stops = frozenset({10, 11}), frozenset({0})
    assert md.line_of([5, 6, 10, 7, 8], ends, stops) == [5, 6, 10]
    assert md.line_of([10, 11, 5, 10, 7], ends, stops) == [10, 11, 5, 10]   # a blank line first
    assert md.line_of([5, 0, 6], ends, stops) == [5]
    assert md.line_of([5, 6, 7], ends, stops) == [5, 6, 7]


def test_batched_build_is_each_prompts_own_greedy_continuation(tiny_runtime):
    """Left-padded batches give every position the continuation its prompt gives alone
    (positions near a file's start make prompts of different lengths in one batch)."""
    seqs = [s[:60] for s in _sequences(tiny_runtime)]        # prompts of many lengths
    opts = md.SampleOptions(items=10, prefix_tokens=48, suffix_tokens=8, new_tokens=6,
                            batch=4, seed=3)
    ends = _line_ends(tiny_runtime)
    tokens, bounds = md.build_model_datastore(tiny_runtime, seqs, ends, opts)
    assert len(bounds) == 11 and bounds[-1] == len(tokens)
    lengths = set()
    for i, (s, p) in enumerate(md.sample_positions(seqs, opts.items, opts.seed)):
        prefix = seqs[s][max(0, p - opts.prefix_tokens):p].tolist()
        suffix = seqs[s][p:p + opts.suffix_tokens].tolist()
        prompt = md.fim_prompt(tiny_runtime, prefix, suffix)
        lengths.add(len(prompt))
        want = prefix[-md.CONTEXT_TOKENS:] + md.line_of(
            _greedy(tiny_runtime, prompt, opts.new_tokens), ends, tiny_runtime.stop_ids)
        assert tokens[bounds[i]:bounds[i + 1]].tolist() == want, i
    assert len(lengths) > 1


def test_stored_with_the_fingerprint_and_refused_for_other_weights(tiny_runtime, tiny_model_dir,
                                                                   tmp_path):
    from conftest import make_tiny_model
    tokens = np.arange(30, dtype=np.int32) % 50
    bounds = np.array([0, 10, 30])
    path = tmp_path / "store.npz"
    md.save(path, tokens, bounds, {"fingerprint": md.fingerprint(tiny_model_dir)})
    store = md.load(path, tiny_model_dir)
    assert store.items == 2 and store.tokens == 30
    assert store.index.toks.tolist() == tokens[:10].tolist() + [-1] + tokens[10:].tolist() + [-1]
    other = make_tiny_model(tmp_path / "other", seed=1)
    with pytest.raises(OptionError, match="another model"):
        md.load(path, other)
    with pytest.raises(OptionError, match="no such file"):
        md.load(tmp_path / "missing.npz", tiny_model_dir)
    (tmp_path / "bad.npz").write_bytes(b"not a zip")
    with pytest.raises(OptionError, match="unreadable"):
        md.load(tmp_path / "bad.npz", tiny_model_dir)
    md.save(tmp_path / "cut.npz", tokens, np.array([0, 10, 99]), {"fingerprint": "x"})
    with pytest.raises(OptionError, match="corrupt"):
        md.load(tmp_path / "cut.npz", tiny_model_dir)


def test_options_name_the_missing_file():
    with pytest.raises(OptionError, match="completion.model_datastore.*nowhere.npz"):
        InklingOptions().merged({"completion": {"model_datastore": "/no/nowhere.npz"}})
    InklingOptions().merged({"completion": {"model_datastore": "none"}})


def test_engine_drafts_from_it_and_stays_lossless(tiny_runtime, tiny_model_dir, tmp_path, caplog):
    """The store's continuation after a matching context is drafted (fewer forwards);
    the suggestion is greedy decoding's. ``auto`` finds the model folder's own store and
    skips, with a warning, one made by other weights; a named one is refused."""
    text = "def area(width, height):\n    return "
    uri = "file:///w/a.py"
    plain = Engine(InklingOptions().merged({"completion": {"max_new_tokens": 10,
                                                           "token_healing": False}}),
                   runtime=tiny_runtime)
    plain.open(uri, text)
    want = plain.complete(uri, Position(1, 11))
    ids = tiny_runtime.encode(text)
    made = tiny_runtime.encode(want.drafts[0].text)
    path = tmp_path / "own.npz"
    md.save(path, np.asarray(ids + made, np.int32), np.array([0, len(ids) + len(made)]),
            {"fingerprint": md.fingerprint(tiny_model_dir)})
    results = {}
    for spec in ("none", str(path)):
        engine = Engine(InklingOptions().merged({"completion": {
            "draft": "suffix", "datastore": "none", "model_datastore": spec,
            "max_new_tokens": 10, "token_healing": False}}), runtime=tiny_runtime)
        prepared = engine.prepare()
        assert not prepared.failed
        assert ("no model datastore" in prepared.done) == (spec == "none")
        engine.open(uri, text)
        results[spec] = engine.complete(uri, Position(1, 11))
    assert results[str(path)].drafts[0].text == results["none"].drafts[0].text == \
        want.drafts[0].text
    if len(made) > 2:
        assert results[str(path)].forwards < results["none"].forwards

    own = tiny_model_dir / md.FILE_NAME
    md.save(own, np.asarray(ids, np.int32), np.array([0, len(ids)]), {"fingerprint": "other"})
    try:
        auto = Engine(InklingOptions().merged({"completion": {"draft": "suffix"}}),
                      runtime=tiny_runtime)
        with caplog.at_level(logging.WARNING, logger="inkling.drafting"):
            assert "no model datastore" in auto.prepare().done
        assert "another model" in caplog.text
        named = Engine(InklingOptions().merged({"completion": {
            "draft": "suffix", "model_datastore": str(own)}}), runtime=tiny_runtime)
        (step, error), = named.prepare().failed
        assert step == "model datastore" and isinstance(error, OptionError)
        assert "another model" in str(error)
    finally:
        own.unlink()


def test_drafter_searches_it_as_the_model_source(tiny_runtime):
    store = md.ModelDatastore(md.StreamIndex.of([[1, 2, 3, 4, 5, 6, 7]]), 1, 7, {})
    tree = SuffixDrafter({"model": store}).draft([9, 2, 3, 4], 8, frozenset())
    assert tree.source == "model" and tree.tokens[:3] == [5, 6, 7]


@pytest.mark.slow                        # `inkling datastore model` as a subprocess
def test_cli_builds_one_and_refuses_bad_counts(tiny_model_dir, tmp_path):
    out = tmp_path / "cli.npz"
    folder = tmp_path / "code"
    folder.mkdir()
    (folder / "m.py").write_text("def f(x):\n    return x + 1\n" * 20)
    run = subprocess.run([sys.executable, "-m", "inkling.cli.main", "datastore", "model",
                          "--model", str(tiny_model_dir), "--from", str(folder), "--items", "5",
                          "--batch", "2", "--out", str(out)], capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr
    assert "5 continuations" in run.stderr and md.load(out, tiny_model_dir).items == 5
    bad = subprocess.run([sys.executable, "-m", "inkling.cli.main", "datastore", "model",
                          "--model", str(tiny_model_dir), "--items", "0", "--out", str(out)],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "--items" in bad.stderr
