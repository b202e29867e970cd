"""What a load reads from each zoo family's tokenizer (runtime/fim.py, model_setup.text_fields):
the BOS the tokenizer adds, the stop set (the family's own end tokens and the eos ids, never
another family's, never a token BPE merges to), the warning for a model with no FIM tokens;
and that the bundled model's are what they were."""
from __future__ import annotations

import json
import logging

import pytest
from tokenizers import Tokenizer

from zoo_models import ZOO_MODELS, zoo_model, zoo_runtimes
from inkling.runtime.fim import KNOWN_FORMATS, added_tokens, bos_id
from inkling.runtime.model_description import describe
from inkling.runtime.model_loader import load_runtime

# each family's end tokens as its public tokenizer names them (llama.cpp ends a Qwen
# generation at its FIM pad and repository tokens too)
QWEN_ENDS = {"<|endoftext|>", "<|file_sep|>", "<|fim_pad|>", "<|repo_name|>"}
FAMILY_ENDS = {"qwen2.5-coder-0.5b": QWEN_ENDS, "qwen2.5-coder-1.5b": QWEN_ENDS,
               "deepseek-coder-1.3b-base": {"<｜end▁of▁sentence｜>", "<|EOT|>"},
               "starcoder2-3b": {"<|endoftext|>", "<file_sep>"},
               "llama-3.2-1b": {"<|end_of_text|>"}}
# the BOS each family's tokenizer puts first (None: it adds none)
FAMILY_BOS = {"qwen2.5-coder-0.5b": None, "qwen2.5-coder-1.5b": None,
              "deepseek-coder-1.3b-base": "<｜begin▁of▁sentence｜>", "starcoder2-3b": None,
              "llama-3.2-1b": "<|begin_of_text|>"}
FORCED = ("none", "forced", "completion.draft is none")


@pytest.fixture(scope="module")
def runtimes():
    return zoo_runtimes()


def _eos(path) -> set[int]:
    ids = set()
    for name in ("config.json", "generation_config.json"):
        value = json.loads((path / name).read_text()).get("eos_token_id")
        ids.update(value if isinstance(value, list) else [value])
    return ids


@pytest.mark.parametrize("name", ZOO_MODELS)
def test_the_bos_is_the_familys(name, runtimes):
    rt = runtimes(name)
    tok = Tokenizer.from_file(str(rt.path / "tokenizer.json"))
    want = FAMILY_BOS[name]
    assert rt.bos_id == (tok.token_to_id(want) if want else None)
    if want:           # what encoding with the tokenizer's own special tokens puts first
        assert tok.encode("x = 1").ids[0] == rt.bos_id


def test_tokenizer_config_says_whether_the_bos_is_added():
    tok = Tokenizer.from_file(str(zoo_model("deepseek-coder-1.3b-base") / "tokenizer.json"))
    bos = tok.token_to_id("<｜begin▁of▁sentence｜>")
    assert bos_id(tok, {}) == bos                                   # the post-processor's
    assert bos_id(tok, {"add_bos_token": False, "bos_token": "<｜begin▁of▁sentence｜>"}) is None
    assert bos_id(tok, {"add_bos_token": True,
                        "bos_token": {"content": "<｜begin▁of▁sentence｜>"}}) == bos


@pytest.mark.parametrize("name", ZOO_MODELS)
def test_the_stop_set_is_the_familys_own(name, runtimes):
    rt = runtimes(name)
    vocab, added = rt.tokenizer.get_vocab(), added_tokens(rt.tokenizer)
    eos = _eos(rt.path)
    own = {vocab[t] for t in FAMILY_ENDS[name]}
    assert own | eos <= rt.stop_ids
    assert rt.stop_ids <= set(added.values()) | eos     # no token BPE merges to
    if rt.fim is not None:                                # its own markers stop it too
        assert {vocab[t] for t in (rt.fim.prefix, rt.fim.suffix, rt.fim.middle)} <= rt.stop_ids
    mine = FAMILY_ENDS[name] | ({rt.fim.prefix, rt.fim.suffix, rt.fim.middle} if rt.fim
                                else set())
    others = {t for f in KNOWN_FORMATS for t in (*f.end, f.prefix, f.suffix, f.middle)
              if t in vocab and t not in mine}
    assert not {vocab[t] for t in others} & rt.stop_ids - eos, others


def test_qwens_bpe_piece_that_reads_as_an_end_token_does_not_stop_it(runtimes):
    rt = runtimes("qwen2.5-coder-0.5b")
    piece = rt.tokenizer.token_to_id("</s>")         # Code Llama's end; an ordinary piece here
    assert piece is not None and "</s>" not in added_tokens(rt.tokenizer)
    assert piece not in rt.stop_ids


def test_a_model_without_fim_tokens_warns_once_and_says_none(caplog):
    path = zoo_model("llama-3.2-1b")
    with caplog.at_level(logging.WARNING):
        rt = load_runtime(path, device="cpu", dtype="float32")
    said = [r.getMessage() for r in caplog.records if "fill-in-the-middle" in r.getMessage()]
    assert said == [f"{path}: no fill-in-the-middle tokens in its vocabulary: it completes "
                    "from the prefix alone"]
    d = describe(rt, "auto", FORCED)
    assert (rt.fim, d.fim, d.fim_order) == (None, "none", "none")
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        load_runtime(zoo_model("starcoder2-3b"), device="cpu", dtype="float32")
    assert not [r for r in caplog.records if "fill-in-the-middle" in r.getMessage()]


def test_the_bundled_models_bos_and_stops_are_its_five_special_tokens(bundled_model_dir):
    rt = load_runtime(bundled_model_dir, device="cpu", dtype="float32")
    names = ("<|endoftext|>", "<|file_sep|>", "<|fim_prefix|>", "<|fim_suffix|>",
             "<|fim_middle|>")
    assert rt.bos_id is None and (rt.fim.family, rt.fim_order) == ("inkling", "spm")
    assert rt.stop_ids == {rt.token_id(t) for t in names} | _eos(bundled_model_dir)
