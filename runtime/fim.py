"""Fill-in-the-middle prompt formats of the model families inkling knows.
``psm``: ``<pre> prefix <suf> suffix <mid>``; ``spm``: ``<pre> <suf> suffix <mid> prefix``."""
from __future__ import annotations

from dataclasses import dataclass

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
            raise ValueError(f"model family {self.family!r} has no {order!r} prompt order "
                             f"(it knows {', '.join(self.orders)})")
        pre, suf, mid = token_id[self.prefix], token_id[self.suffix], token_id[self.middle]
        if order == "psm":
            return [pre, *prefix_ids, suf, *suffix_ids, mid]
        return [pre, suf, *suffix_ids, mid, *prefix_ids]

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


def detect_format(vocab: dict[str, int], family_hint: str | None = None) -> FimFormat | None:
    """The first known format with its markers in ``vocab``, ``family_hint`` first."""
    candidates = [f for f in KNOWN_FORMATS
                  if all(t in vocab for t in (f.prefix, f.suffix, f.middle))]
    hinted = [f for f in candidates if f.family == family_hint]
    others = [f for f in candidates if f is not INKLING]
    return (hinted or others or [None])[0]
