"""A tokenizer's vocabulary as decoded strings, indexed for building monitor masks.

Built once per tokenizer: every id is decoded alone (``Tokenizer.decode([id])``; a
byte-level token that is a partial UTF-8 sequence decodes to U+FFFD and so never counts
as identifier text). The indexes answer, for a string r: which tokens are exactly r
(``exact``); which are whitespace then r (``lead_exact``); which are r followed by a
character that ends an identifier (``ends_with``), with or without leading whitespace.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

WHITESPACE = " \t\n\r\f\v"


def is_ident_char(ch: str) -> bool:
    return ch == "_" or ch.isalnum()


def ident_head(text: str) -> str:
    i = 0
    while i < len(text) and is_ident_char(text[i]):
        i += 1
    return text[:i]


@dataclass
class TokenVocabulary:
    size: int                                     # mask length (the model's vocab size)
    texts: list[str]                              # decoded text per id ('' beyond tokenizer)
    special: np.ndarray                           # bool [size]: special / added tokens
    exact: dict = field(default_factory=dict)         # text -> [ids]
    lead_exact: dict = field(default_factory=dict)    # text after leading ws -> [ids]
    ends_with: dict = field(default_factory=dict)     # identifier head -> [ids] (rest follows)
    lead_ends_with: dict = field(default_factory=dict)  # same after leading whitespace
    dotted: list = field(default_factory=list)    # (id, head, has_rest) for ".name..." tokens
    dotted_ids: np.ndarray = None                     # ids of those tokens
    dotted_heads: dict = field(default_factory=dict)  # head -> ([ids with rest], [ids without])
    dotted_prefixes: set = field(default_factory=set)  # prefixes of their heads
    prefixes: set = field(default_factory=set)        # prefixes of name-only tokens
    lead_prefixes: set = field(default_factory=set)   # same after leading whitespace
    max_len: int = 0
    ws_only: np.ndarray = None                    # ids of whitespace-only tokens
    ends_identifier: np.ndarray = None            # bool [size]: first char ends a name
    escape_plain: np.ndarray = None               # bool [size]: first char neither name nor ws
    escape_lead: np.ndarray = None                # bool [size]: ws, then not a name char

    @staticmethod
    def from_tokenizer(tokenizer, size: int | None = None) -> "TokenVocabulary":
        """Decode every id of a ``tokenizers.Tokenizer`` alone; ``size`` pads to the
        model's vocabulary size (ids past the tokenizer's are never allowed)."""
        n = tokenizer.get_vocab_size(with_added_tokens=True)
        size = max(size or n, n)
        texts = tokenizer.decode_batch([[i] for i in range(n)], skip_special_tokens=False)
        special = np.zeros(size, dtype=bool)
        for tid, added in tokenizer.get_added_tokens_decoder().items():
            if added.special and tid < size:
                special[tid] = True
        return TokenVocabulary.from_texts(list(texts) + [""] * (size - n), special)

    @staticmethod
    def from_texts(texts: list[str], special: np.ndarray | None = None) -> "TokenVocabulary":
        size = len(texts)
        special = special if special is not None else np.zeros(size, dtype=bool)
        v = TokenVocabulary(size, texts, special)
        v._index()
        return v

    def _index(self) -> None:
        ws_only, ends, esc_plain, esc_lead = [], [], [], []
        for tid, text in enumerate(self.texts):
            if not text or self.special[tid]:
                continue
            self.max_len = max(self.max_len, len(text))
            body = text.lstrip(WHITESPACE)
            lead = len(body) < len(text)
            if not body:
                ws_only.append(tid)
                ends.append(tid)
                continue
            self._add(self.lead_exact if lead else self.exact, body if lead else text, tid)
            head = ident_head(body)
            if len(head) == len(body):
                table = self.lead_prefixes if lead else self.prefixes
                table.update(body[:i] for i in range(1, len(body) + 1))
            if len(head) < len(body):
                self._add(self.lead_ends_with if lead else self.ends_with, head, tid)
            if lead or not is_ident_char(text[0]):
                ends.append(tid)
            if not head:
                (esc_lead if lead else esc_plain).append(tid)
            if text[0] == "." and len(text) > 1 and is_ident_char(text[1]):
                self._add_dotted(tid, text)
        self.ws_only = np.array(ws_only, dtype=np.int64)
        self.dotted_ids = np.array([d[0] for d in self.dotted], dtype=np.int64)
        self.ends_identifier = self._dense(ends) | self.special
        self.escape_plain = self._dense(esc_plain)
        self.escape_lead = self._dense(esc_lead)

    def _add_dotted(self, tid: int, text: str) -> None:
        h = ident_head(text[1:])
        rest = len(h) + 1 < len(text)
        self.dotted.append((tid, h, rest))
        self.dotted_heads.setdefault(h, ([], []))[0 if rest else 1].append(tid)
        self.dotted_prefixes.update(h[:i] for i in range(1, len(h) + 1))

    @staticmethod
    def _add(table: dict, key: str, tid: int) -> None:
        table.setdefault(key, []).append(tid)

    def _dense(self, ids) -> np.ndarray:
        mask = np.zeros(self.size, dtype=bool)
        if len(ids):
            mask[np.asarray(ids, dtype=np.int64)] = True
        return mask

    def text(self, token_id: int) -> str:
        return self.texts[token_id] if 0 <= token_id < self.size else ""
