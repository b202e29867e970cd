"""Byte-level BPE tokenizer trained on the corpus with the `tokenizers` library."""
from __future__ import annotations

import json
from pathlib import Path

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

from inkling.runtime.fim import SPECIAL_TOKENS

VOCAB_SIZE = 8192  # keep in step with TrainOptions.vocab_size


def train_tokenizer(texts: list[str], vocab_size: int = VOCAB_SIZE) -> Tokenizer:
    if vocab_size > 16384:
        raise ValueError(f"vocab_size {vocab_size} is over the 16,384 limit")
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, min_frequency=2, show_progress=True,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(texts, trainer, length=len(texts))
    return tok


def save_tokenizer(tok: Tokenizer, out: Path, max_length: int) -> None:
    """tokenizer.json plus the small config files transformers expects beside it."""
    tok.save(str(out / "tokenizer.json"))
    config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "model_max_length": max_length,
        "bos_token": None,
        "eos_token": "<|endoftext|>",
        "unk_token": None,
        "pad_token": "<|endoftext|>",
        "additional_special_tokens": list(SPECIAL_TOKENS[1:]),
        "clean_up_tokenization_spaces": False,
    }
    (out / "tokenizer_config.json").write_text(json.dumps(config, indent=2) + "\n")
