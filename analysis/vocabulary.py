"""A tokenizer's vocabulary as decoded strings, indexed for building monitor masks: for a string
r, the tokens that are r (``exact``), blanks then r (``lead_exact``), or r then an identifier's
end (``ends_with``). Each id is decoded alone; a partial UTF-8 token is never identifier text.
"""
from __future__ import annotations

import re
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


def ends_target(rest: str) -> bool:
    """``rest`` may end an assignment target: blanks, then ``=`` (not ``==``), ``,`` or ``:``."""
    body = rest.lstrip(" \t")
    if not body:
        return False
    if body[0] == "=":
        return body[1:2] != "="
    return body[0] in ",:"


def ends_assign(rest: str) -> bool:
    """``rest`` is blanks, then ``=`` not followed by ``=`` (a keyword argument's)."""
    body = rest.lstrip(" \t")
    return body[:1] == "=" and body[1:2] != "="


_STRING_START = re.compile(r"(?i)(?:[rbuf]|rb|br|fr|rf)['\"]")
STRING_PREFIXES = frozenset(p for a in ("", "r", "R") for b in ("", "b", "B", "f", "F", "u", "U")
                            for p in (a + b, b + a) if p and p.lower() not in ("ur", "ru"))


def _starts_name(body: str) -> bool:
    return is_ident_char(body[0]) and not body[0].isdigit()


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
    name_only: np.ndarray = None                  # bool [size]: name characters only
    target_end: np.ndarray = None                 # bool [size]: what may end an assignment
                                                  #   target (``=``, ``,``, ``:``; spaces first)
    name_target_end: np.ndarray = None            # bool [size]: name characters, then that
    blank: np.ndarray = None                      # bool [size]: spaces or tabs only
    # free-name reads (``return |``): a token that starts a name, after blanks or not
    not_name_start: np.ndarray = None             # bool [size]: starts no name
    not_blank_name: np.ndarray = None             # bool [size]: is not blanks then a name
    blank_name_only: np.ndarray = None            # bool [size]: blanks, then name chars only
    assign_end: np.ndarray = None                 # bool [size]: blanks, ``=`` (not ``==``)
    name_assign_end: np.ndarray = None            # bool [size]: name chars, then that
    blank_name_assign_end: np.ndarray = None      # bool [size]: blanks, name chars, then that
    string_start: np.ndarray = None               # bool [size]: blanks, a string prefix, a quote
    quote_start: np.ndarray = None                # bool [size]: starts with a quote
    name_starts: list = field(default_factory=list)   # (id, head, has_rest, blanks) of
                                                      # the tokens that start a name

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
        name_only, target_end, name_target_end, blank = [], [], [], []
        reads = {k: [] for k in ("name_start", "blank_name", "blank_name_only", "assign_end",
                                 "name_assign_end", "blank_name_assign_end")}
        for tid, text in enumerate(self.texts):
            if not text or self.special[tid]:
                continue
            self.max_len = max(self.max_len, len(text))
            body = text.lstrip(WHITESPACE)
            lead = len(body) < len(text)
            if not body:
                ws_only.append(tid)
                ends.append(tid)
                if "\n" not in text and "\r" not in text:
                    blank.append(tid)
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
            if not lead and len(head) == len(body):
                name_only.append(tid)
            elif not lead and head and ends_target(text[len(head):]):
                name_target_end.append(tid)
            elif ends_target(text):
                target_end.append(tid)
            if text[0] == "." and len(text) > 1 and is_ident_char(text[1]):
                self._add_dotted(tid, text)
            self._classify_read(tid, text, reads)
        self.ws_only = np.array(ws_only, dtype=np.int64)
        self.dotted_ids = np.array([d[0] for d in self.dotted], dtype=np.int64)
        self.ends_identifier = self._dense(ends) | self.special
        self.escape_plain = self._dense(esc_plain)
        self.escape_lead = self._dense(esc_lead)
        self.name_only = self._dense(name_only)
        self.target_end = self._dense(target_end)
        self.name_target_end = self._dense(name_target_end)
        self.blank = self._dense(blank)
        real = np.array([bool(t) for t in self.texts], dtype=bool)   # not padding
        self.not_name_start = ~self._dense(reads["name_start"]) & real
        self.not_blank_name = ~self._dense(reads["blank_name"]) & real
        self.name_starts = reads.get("starts", [])
        self.string_start = self._dense(reads.get("string_start", []))
        self.quote_start = self._dense(reads.get("quote_start", []))
        for key in ("blank_name_only", "assign_end", "name_assign_end",
                    "blank_name_assign_end"):
            setattr(self, key, self._dense(reads[key]))

    @staticmethod
    def _classify_read(tid: int, text: str, reads: dict) -> None:
        body = text.lstrip(" \t")
        blanks = len(body) < len(text)
        if not body:
            return
        if body[0] in "'\"":
            if not blanks:
                reads.setdefault("quote_start", []).append(tid)
            reads.setdefault("string_start", []).append(tid)
        elif _STRING_START.match(body):
            reads.setdefault("string_start", []).append(tid)
        if _starts_name(body):
            reads["name_start"].append(tid)
            head = ident_head(body)
            reads.setdefault("starts", []).append((tid, head, len(head) < len(body), blanks))
            if blanks:
                reads["blank_name"].append(tid)
            if len(head) == len(body):
                if blanks:
                    reads["blank_name_only"].append(tid)
            elif ends_assign(body[len(head):]):
                reads["blank_name_assign_end" if blanks else "name_assign_end"].append(tid)
        elif ends_assign(text):
            reads["assign_end"].append(tid)

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
