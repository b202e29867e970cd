"""The zoo's tokenizers (scripts/model_zoo.py) against llama.cpp's reference encodings of the
vocab files they are built from, with the BOS each family adds and Qwen2.5's special tokens."""
from __future__ import annotations

import pytest

from zoo_models import ZOO_TOKENIZERS, zoo, zoo_tokenizer


def _vocab_file(family: str):
    return zoo.sources() / f"models/ggml-vocab-{zoo.TOKENIZERS[family].vocab}.gguf"


@pytest.mark.parametrize("family", ZOO_TOKENIZERS)
def test_tokenizer_encodes_the_reference_vectors(family):
    zoo_tokenizer(family)
    equal, total, differ = zoo.check_tokenizer(family)
    assert total > 0
    assert differ == [] and equal == total


@pytest.mark.parametrize("family", ZOO_TOKENIZERS)
def test_reference_texts_decode_back(family):
    tok = zoo_tokenizer(family)
    for text, _ in zoo.reference_tests(_vocab_file(family)):
        assert tok.decode(tok.encode(text, add_special_tokens=False).ids) == text


@pytest.mark.parametrize("family", ZOO_TOKENIZERS)
def test_bos_only_where_the_family_adds_one(family):
    tok = zoo_tokenizer(family)
    bare = tok.encode("def f(x):", add_special_tokens=False).ids
    full = tok.encode("def f(x):").ids
    bos = zoo.TOKENIZERS[family].bos
    if bos is None:
        assert full == bare
    else:
        configs = [m.config for m in zoo.MODELS.values() if m.tokenizer == family]
        assert full == [configs[0]["bos_token_id"], *bare]     # the public config's BOS
        assert tok.id_to_token(full[0]) == bos


def test_qwen25_special_tokens_at_their_ids():
    qwen2, qwen25 = zoo_tokenizer("qwen2"), zoo_tokenizer("qwen2.5")
    assert qwen25.token_to_id("<|fim_prefix|>") == 151659
    assert qwen25.token_to_id("<|fim_middle|>") == 151660
    assert qwen25.token_to_id("<|fim_suffix|>") == 151661
    assert qwen25.token_to_id("<|file_sep|>") == 151664
    assert qwen25.token_to_id("[PAD151646]") is None
    assert qwen2.token_to_id("<|fim_prefix|>") is None   # Qwen2's vocabulary has no FIM
    text = "<|fim_prefix|>def f():\n<|fim_suffix|>\n<|fim_middle|>"
    ids = qwen25.encode(text, add_special_tokens=False).ids
    assert ids[0] == 151659 and 151661 in ids and ids[-1] == 151660
    body = "def area(w, h):\n    return w * h\n"
    assert qwen25.encode(body).ids == qwen2.encode(body).ids   # the same BPE below the specials


def test_deepseek_fim_tokens_are_single_ids():
    tok = zoo_tokenizer("deepseek-coder")
    ids = tok.encode("<｜fim▁begin｜>x = <｜fim▁hole｜>\n<｜fim▁end｜>", add_special_tokens=False).ids
    names = [tok.id_to_token(i) for i in ids]
    assert names[0] == "<｜fim▁begin｜>" and "<｜fim▁hole｜>" in names
    assert names[-1] == "<｜fim▁end｜>"
