"""The monitor's masks and their biases against the implementation before issue 70 (the
reference, tests/reference_token_masks.py): the same mask for every kind of site, on the
bundled model's vocabulary and on Qwen2.5's 151,936-token one, for many drawn name sets."""
from __future__ import annotations

import builtins
import keyword
import random

import numpy as np
import pytest
import torch

from reference_token_masks import ReferenceMaskCache
from zoo_models import zoo_tokenizer

from inkling.analysis.token_masks import MaskCache
from inkling.analysis.trigger_site import NONE, OPTIONAL, REQUIRED
from inkling.analysis.vocabulary import STRING_PREFIXES, TokenVocabulary, ident_head
from inkling.completion.decoding.mask_bias import MaskBiases, biased


@pytest.fixture(scope="module")
def bundled_vocab(bundled_model_dir) -> TokenVocabulary:
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(str(bundled_model_dir / "tokenizer.json"))
    return TokenVocabulary.from_tokenizer(tok, tok.get_vocab_size() + 5)


@pytest.fixture(scope="module")
def qwen_vocab() -> TokenVocabulary:
    tok = zoo_tokenizer("qwen2.5")
    return TokenVocabulary.from_tokenizer(tok, 151936)


def _pool(vocab: TokenVocabulary, rng: random.Random) -> list[str]:
    """Names to draw from: Python's, the vocabulary's own name tokens, made-up ones, string
    prefixes, dotted module paths and names with non-ASCII letters."""
    heads = sorted({ident_head(t.lstrip()) for t in vocab.texts if t.strip()} - {""})
    made = ["".join(rng.choice("abcdefgh_xyz0") for _ in range(rng.randint(1, 14)))
            for _ in range(300)]
    made = [m for m in made if not m[0].isdigit()]
    return sorted(set(dir(builtins)) | set(keyword.kwlist) | set(rng.sample(heads, 400)) |
                  set(made) | {"f", "rb", "u", "os.path", "collections.abc", "naïve", "données",
                               "self", "__init__", "_", "x"})


def _draws(pool: list[str], rng: random.Random, n: int):
    """(names, typed) pairs: small and large sets, typed a prefix of a name, a miss or none."""
    for i in range(n):
        size = rng.choice((1, 3, 12, 60, 400)) if i % 9 else len(pool)
        names = frozenset(rng.sample(pool, min(size, len(pool))))
        name = rng.choice(sorted(names))
        typed = rng.choice(("", "", name[:rng.randint(1, len(name))], name, name + "q", "zzq"))
        yield names, typed


def _same(a, b) -> None:
    if a is None or b is None:
        assert a is None and b is None
        return
    assert a.dtype == b.dtype == torch.bool and torch.equal(a, b)


def _check(vocab: TokenVocabulary, rng: random.Random, n: int) -> int:
    pool = _pool(vocab, rng)
    new, old = MaskCache(vocab), ReferenceMaskCache(vocab)
    compared = 0
    for names, typed in _draws(pool, rng, n):
        assert new.has_prefix(names, typed) == old.has_prefix(names, typed)
        for lead in (NONE, OPTIONAL, REQUIRED):
            for escape in (False, True):
                _same(new.names_mask(names, typed, lead, escape),
                      old.names_mask(names, typed, lead, escape))
        _same(new.dotted_mask(names), old.dotted_mask(names))
        _same(new.dotted_target_mask(names), old.dotted_target_mask(names))
        _same(new.target_mask(names, typed), old.target_mask(names, typed))
        other = frozenset(rng.sample(pool, 5)) | STRING_PREFIXES & {"f"}
        for parts in ((names,), (names, other)):
            for after_keyword in (False, True):
                for keyword_arg in (False, True):
                    _same(new.read_mask(parts, typed, after_keyword, keyword_arg),
                          old.read_mask(parts, typed, after_keyword, keyword_arg))
        compared += 1
    _same(new.ended_target_mask(), old.ended_target_mask())
    return compared


def test_masks_match_the_reference_on_the_bundled_vocabulary(bundled_vocab):
    assert _check(bundled_vocab, random.Random(70), 120) == 120


@pytest.mark.slow
def test_masks_match_the_reference_on_qwen_vocabulary(qwen_vocab):
    assert _check(qwen_vocab, random.Random(71), 60) == 60


def test_a_read_over_many_names_scans_the_name_tokens_as_before(bundled_vocab):
    """Enough names that the reference bisects each name-start token into them."""
    heads = sorted({ident_head(t.lstrip()) for t in bundled_vocab.texts if t.strip()} - {""})
    names = frozenset(heads + [h + "_tail" for h in heads])
    assert len(names) * 4 > len(bundled_vocab.name_starts)
    new, old = MaskCache(bundled_vocab), ReferenceMaskCache(bundled_vocab)
    for after_keyword in (False, True):
        _same(new.read_mask((names,), "", after_keyword, False),
              old.read_mask((names,), "", after_keyword, False))


def _reference_bias(mask: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """The bias as mask_bias.biased made it before issue 70."""
    n = like.shape[-1]
    allowed = mask[:n].to(like.device)
    if allowed.shape[-1] < n:
        allowed = torch.cat((allowed, allowed.new_zeros(n - allowed.shape[-1])))
    return torch.zeros(n, dtype=like.dtype, device=like.device).masked_fill_(
        ~allowed, float("-inf"))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("mask_len,n", [(151936, 151936), (100, 100), (80, 100), (120, 100)])
def test_biases_match_the_reference(dtype, mask_len, n):
    gen = torch.Generator().manual_seed(mask_len + n)
    mask = torch.rand(mask_len, generator=gen) > 0.7
    like = torch.zeros(n, dtype=dtype)
    got, want = biased(mask, like), _reference_bias(mask, like)
    assert got.dtype == want.dtype and got.shape == want.shape and torch.equal(got, want)
    kept = MaskBiases().bias(mask, like)
    assert torch.equal(kept, want)
    strided = torch.rand(2 * mask_len, generator=gen)[::2] > 0.5       # a view, not contiguous
    assert torch.equal(biased(strided, like), _reference_bias(strided, like))


def test_the_bias_leaves_the_mask_alone():
    mask = torch.from_numpy(np.array([True, False, True]))
    before = mask.clone()
    biased(mask, torch.zeros(3))
    assert torch.equal(mask, before)
