"""The monitor's vocabulary index kept on disk (analysis/vocabulary_cache.py): what is read
back equals a fresh index field by field, a changed tokenizer or size rebuilds, a corrupt
file rebuilds, and the file holds no pickled object."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from tokenizers import Tokenizer

from inkling.analysis.vocabulary import TextIndex, TextSpans, TokenVocabulary
from inkling.analysis.vocabulary_cache import cached_vocabulary


@pytest.fixture()
def tokenizer(bundled_model_dir) -> Tokenizer:
    """The bundled model's: a real vocabulary, with member (``.name``) and name tokens."""
    return Tokenizer.from_file(str(bundled_model_dir / "tokenizer.json"))


def assert_same(a: TokenVocabulary, b: TokenVocabulary) -> None:
    for f in dataclasses.fields(TokenVocabulary):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(y, np.ndarray):
            assert isinstance(x, np.ndarray) and x.dtype == y.dtype, f.name
            assert np.array_equal(x, y), f.name
        elif isinstance(y, TextIndex):
            assert isinstance(x, TextIndex) and x.keys == y.keys, f.name
            for part in ("ids", "starts"):
                u, w = getattr(x, part), getattr(y, part)
                assert u.dtype == w.dtype and np.array_equal(u, w), (f.name, part)
        elif isinstance(y, TextSpans):
            assert isinstance(x, TextSpans), f.name
            for part, w in y.arrays().items():
                u = x.arrays()[part]
                assert u.dtype == w.dtype and np.array_equal(u, w), (f.name, part)
        else:
            assert type(x) is type(y) and x == y, f.name


def test_the_cached_index_equals_a_fresh_one(tokenizer, tmp_path):
    size = tokenizer.get_vocab_size() + 8                       # padded past the tokenizer
    fresh = TokenVocabulary.from_tokenizer(tokenizer, size)
    built, cached = cached_vocabulary(tokenizer, size, tmp_path)
    assert not cached
    assert_same(built, fresh)
    [path] = tmp_path.iterdir()
    read, cached = cached_vocabulary(tokenizer, size, tmp_path)
    assert cached and read is not built
    assert_same(read, fresh)
    assert read.dotted and read.name_starts and read.exact and read.lead_exact  # not all empty
    whole = read.exact.keys[len(read.exact) // 2]          # a whole token's text is that string
    assert any(t is whole for t in read.texts)
    with np.load(path, allow_pickle=False) as z:                 # nothing pickled in it
        assert all(z[name].dtype != object for name in z.files)


def test_a_changed_tokenizer_or_size_rebuilds(tokenizer, tmp_path):
    n = tokenizer.get_vocab_size()
    cached_vocabulary(tokenizer, None, tmp_path)
    assert cached_vocabulary(tokenizer, None, tmp_path)[1]
    vocab, cached = cached_vocabulary(tokenizer, n + 100, tmp_path)   # another mask size
    assert not cached and vocab.size == n + 100
    tokenizer.add_tokens(["zz_new_token_zz"])                      # another tokenizer.json
    vocab, cached = cached_vocabulary(tokenizer, None, tmp_path)
    assert not cached and vocab.size == n + 1 and vocab.text(n) == "zz_new_token_zz"
    assert_same(vocab, TokenVocabulary.from_tokenizer(tokenizer))
    assert len(list(tmp_path.iterdir())) == 3
    assert cached_vocabulary(tokenizer, None, tmp_path)[1]


@pytest.mark.parametrize("damage", [b"not an npz", b""])
def test_a_corrupt_cache_file_is_rebuilt(tokenizer, tmp_path, caplog, damage):
    cached_vocabulary(tokenizer, None, tmp_path)
    [path] = tmp_path.iterdir()
    path.write_bytes(damage)
    vocab, cached = cached_vocabulary(tokenizer, None, tmp_path)
    assert not cached and "unreadable" in caplog.text
    assert_same(vocab, TokenVocabulary.from_tokenizer(tokenizer))
    assert cached_vocabulary(tokenizer, None, tmp_path)[1]        # written again, whole


def test_an_unwritable_cache_is_logged_not_raised(tokenizer, tmp_path, caplog):
    blocked = tmp_path / "file"
    blocked.write_text("")
    vocab, cached = cached_vocabulary(tokenizer, None, blocked / "sub")
    assert not cached and vocab.size == tokenizer.get_vocab_size()
    assert "not written" in caplog.text
