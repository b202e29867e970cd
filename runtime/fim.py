"""Fill-in-the-middle prompt formats of the model families inkling knows.
``psm``: ``<pre> prefix <suf> suffix <mid>``; ``spm``: ``<pre> <suf> suffix <mid> prefix``."""
from __future__ import annotations

from dataclasses import dataclass

from tokenizers import Tokenizer

from inkling.runtime.errors import ModelError

ORDERS = ("psm", "spm")


@dataclass(frozen=True)
class FimFormat:
    family: str
    prefix: str
    suffix: str
    middle: str
    end: tuple[str, ...]          # tokens that end a middle (end of text, file separator...)
    orders: tuple[str, ...]       # orders the family was trained with, preferred first
    file_sep: str | None = None

    def build(self, order: str, prefix_ids: list[int], suffix_ids: list[int],
              token_id: dict[str, int]) -> list[int]:
        """Token ids of a fill-in-the-middle prompt in ``order``."""
        if order not in self.orders:
            raise ModelError(f"fill-in-the-middle order {order!r}: {self.known_orders()}")
        pre, suf, mid = token_id[self.prefix], token_id[self.suffix], token_id[self.middle]
        if order == "psm":
            return [pre, *prefix_ids, suf, *suffix_ids, mid]
        return [pre, suf, *suffix_ids, mid, *prefix_ids]

    def known_orders(self) -> str:
        return f"model family {self.family!r} knows only {' and '.join(self.orders)}"

    @staticmethod
    def edges(order: str, n_prefix: int, n_suffix: int) -> tuple[int, int]:
        """(where the prefix window starts, where the suffix window ends) in ``build``'s ids."""
        if order == "psm":
            return 1, 2 + n_prefix + n_suffix
        return 3 + n_suffix, 2 + n_suffix


INKLING = FimFormat("inkling", "<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>",
                    ("<|endoftext|>", "<|file_sep|>"), ("spm", "psm"), "<|file_sep|>")
QWEN = FimFormat("qwen2", "<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>",
                 ("<|endoftext|>", "<|file_sep|>", "<|fim_pad|>", "<|repo_name|>"), ("psm",),
                 "<|file_sep|>")
STARCODER = FimFormat("starcoder", "<fim_prefix>", "<fim_suffix>", "<fim_middle>",
                      ("<|endoftext|>", "<file_sep>"), ("psm", "spm"), "<file_sep>")
DEEPSEEK = FimFormat("deepseek-coder", "<｜fim▁begin｜>", "<｜fim▁hole｜>", "<｜fim▁end｜>",
                     ("<｜end▁of▁sentence｜>", "<|EOT|>"), ("psm",))
CODELLAMA = FimFormat("codellama", "▁<PRE>", "▁<SUF>", "▁<MID>", ("▁<EOT>", "</s>"), ("psm",))

KNOWN_FORMATS = (INKLING, QWEN, STARCODER, DEEPSEEK, CODELLAMA)

SPECIAL_TOKENS = ("<|endoftext|>", "<|file_sep|>", "<|fim_prefix|>", "<|fim_suffix|>",
                  "<|fim_middle|>")


def detect_format(tokenizer: Tokenizer, family_hint: str | None = None) -> FimFormat | None:
    """The first known format with its markers in ``tokenizer``'s vocabulary, ``family_hint``
    first (asked marker by marker: the whole vocabulary as a dict is tens of megabytes)."""
    candidates = [f for f in KNOWN_FORMATS if all(
        tokenizer.token_to_id(t) is not None for t in (f.prefix, f.suffix, f.middle))]
    hinted = [f for f in candidates if f.family == family_hint]
    others = [f for f in candidates if f is not INKLING]
    return (hinted or others or [None])[0]


def added_tokens(tokenizer: Tokenizer) -> dict[str, int]:
    """The vocabulary's added tokens by text: control tokens, never pieces BPE merges to."""
    return {t.content: i for i, t in tokenizer.get_added_tokens_decoder().items()}


def stop_ids(fim: FimFormat | None, added: dict[str, int], eos: list[int]) -> frozenset[int]:
    """The family's own end tokens and markers that are added tokens here, and the eos ids."""
    names = (*fim.end, fim.prefix, fim.suffix, fim.middle) if fim is not None else ()
    return frozenset({added[t] for t in names if t in added} | set(eos))


def bos_id(tokenizer: Tokenizer, tokenizer_config: dict) -> int | None:
    """The BOS the tokenizer puts first: tokenizer_config's add_bos_token where it says, else
    the post-processor's (what encoding with special tokens puts before the text)."""
    if "add_bos_token" in tokenizer_config:
        bos = tokenizer_config.get("bos_token")
        bos = bos.get("content") if isinstance(bos, dict) else bos
        return tokenizer.token_to_id(bos) if tokenizer_config["add_bos_token"] and bos else None
    plain = tokenizer.encode("a", add_special_tokens=False).ids
    ids = tokenizer.encode("a").ids
    first = ids[0] if len(ids) > len(plain) and ids[1:1 + len(plain)] == plain else None
    return first if first in added_tokens(tokenizer).values() else None
