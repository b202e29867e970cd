"""A byte-level BPE ``tokenizers.Tokenizer`` from a GGUF file's tokenizer metadata (tokens,
token types, merges, llama.cpp's pre-tokenizer name), split as llama.cpp splits: the tokenizer
of a GGUF model, and of the model zoo's folders, built from llama.cpp's vocab files."""
from __future__ import annotations

import logging

from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers, processors

from inkling.runtime.errors import ModelError
from inkling.runtime.fim import added_tokens, detect_format, stop_ids

# Pre-tokenizer regexes per llama.cpp pre type, as llama.cpp runs them (src/llama-vocab.cpp,
# llm_tokenizer_bpe): each splits every piece the one before left.
PRE_REGEXES = {
    "qwen2": [r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+"
              r"|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"],
    "deepseek-coder": [r"[\r\n]", r"\s?\p{L}+", r"\s?\p{P}+", "[一-龥ࠀ-一가-퟿]+", r"\p{N}"],
    "starcoder": [r"\p{N}",
                  r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)"],
    "llama-bpe": [r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])"
                  r"|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+"
                  r"|\s+(?!\S)|\s+"],
}
# names llama.cpp's vocabulary loader gives the same pre type as a key of PRE_REGEXES
PRE_ALIASES = {**dict.fromkeys(("llama3", "llama-v3", "falcon3", "falcon-h1", "pixtral",
                                "midm-2.0", "lfm2", "jina-v5-nano"), "llama-bpe"),
               **dict.fromkeys(("deepseek-r1-qwen", "kormo", "f2llmv2"), "qwen2")}
# llama.cpp's pre types that look a whole word up before merging (ignore_merges), and those
# that add the BOS where a file does not say (tokenizer.ggml.add_bos_token)
IGNORE_MERGES = {"llama-bpe"}
ADD_BOS = {"llama-bpe"}
NORMAL, CONTROL, USER_DEFINED, UNUSED = 1, 3, 4, 5             # GGUF token types
log = logging.getLogger("inkling.runtime.model_loader")   # the loader's messages


def looks_special(text: str) -> bool:
    """llama.cpp's converter's test for an added token that ought to be a control token."""
    return text == "<pad>" or (text.startswith("<|") and text.endswith("|>")) or (
        text.startswith("<｜") and text.endswith("｜>"))


def is_filler(text: str, kind: int) -> bool:
    """The [PAD<id>] entries llama.cpp's converter pads a vocabulary to the model's size with."""
    return kind in (USER_DEFINED, UNUSED) and text == f"[PAD{text[4:-1]}]" and \
        text[4:-1].isdigit()


def bpe_tokenizer(entries: list[tuple[str, int]], merges: list[str], pre: str,
                  bos: str | None = None, special: dict[str, bool] | None = None) -> Tokenizer:
    """The tokenizer of ``entries`` ((text, GGUF token type) by id) and ``merges`` ("a b"),
    split as llama.cpp's pre type ``pre``; ``bos``: the token it puts first; ``special``:
    added tokens' flags where not the converter's rule. ModelError for an unknown ``pre``."""
    pre = PRE_ALIASES.get(pre, pre)
    if pre not in PRE_REGEXES:
        raise ModelError(f"no pre-tokenizer known for llama.cpp's {pre!r} "
                         f"(inkling knows {', '.join(PRE_REGEXES)})")
    special = special or {}
    vocab, added = {}, []
    for i, (text, kind) in enumerate(entries):
        if is_filler(text, kind):
            continue
        vocab[text] = i
        if kind in (CONTROL, USER_DEFINED):
            flag = special.get(text, kind == CONTROL or looks_special(text))
            added.append(AddedToken(text, special=flag, normalized=False))
    pairs = [tuple(m.split(" ", 1)) for m in merges]
    tok = Tokenizer(models.BPE(vocab, pairs, ignore_merges=pre in IGNORE_MERGES))
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Split(Regex(r), behavior="isolated") for r in PRE_REGEXES[pre]]
        + [pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    tok.add_tokens(added)
    if bos is None:
        tok.post_processor = processors.ByteLevel(trim_offsets=False)
    else:
        tok.post_processor = processors.TemplateProcessing(
            single=f"{bos} $A:0", pair=f"{bos} $A:0 {bos}:1 $B:1",
            special_tokens=[(bos, vocab[bos])])
    return tok


def text_fields(file) -> dict:
    """The runtime's tokenizer, BOS, FIM format and order, stop ids (the family's own end
    tokens, the file's end ids) and context limit, from the metadata of ``file`` (a
    GgufFile, whose open checked that its tokenizer is one ``bpe_tokenizer`` builds)."""
    tokens = file.value("tokenizer.ggml.tokens")
    types = file.value("tokenizer.ggml.token_type") or [NORMAL] * len(tokens)
    bos = file.value("tokenizer.ggml.bos_token_id")
    pre = file.value("tokenizer.ggml.pre", "default")
    says = file.value("tokenizer.ggml.add_bos_token", PRE_ALIASES.get(pre, pre) in ADD_BOS)
    add_bos = bool(says) and bos is not None and 0 <= bos < len(tokens)
    try:
        tokenizer = bpe_tokenizer(list(zip(tokens, types)),
                                  file.value("tokenizer.ggml.merges") or [], pre,
                                  tokens[bos] if add_bos else None)
    except ModelError as exc:
        raise ModelError(f"model {file.path}: {exc}") from None
    fim = detect_format(tokenizer)
    if fim is None:
        log.warning("%s: no fill-in-the-middle tokens in its vocabulary: it completes from "
                    "the prefix alone", file.path)
    ends = [file.value(f"tokenizer.ggml.{k}_token_id") for k in ("eos", "eot")]
    return {"tokenizer": tokenizer, "fim": fim, "fim_order": fim.orders[0] if fim else "none",
            "bos_id": bos if add_bos else None,
            "stop_ids": stop_ids(fim, added_tokens(tokenizer), [i for i in ends if i is not None]),
            "context_limit": min(file.config["max_position_embeddings"], 8192)}
