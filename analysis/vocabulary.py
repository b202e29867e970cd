"""A tokenizer's vocabulary as decoded strings, indexed for building monitor masks: for a string
r, the tokens that are r (``exact``), blanks then r (``lead_exact``), or r then an identifier's
end (``ends_with``). Each id is decoded alone; a partial UTF-8 token is never identifier text.
The tables are sorted arrays over the texts (``TextIndex``), not dicts and sets of substrings.
"""
from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, fields

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


@dataclass(frozen=True, eq=False)
class TextIndex:
    """Token ids by a slice of their text, sorted by it: bisection finds a key's ids and whether
    any key starts with a prefix. An entry costs a pointer, an id and a start (a key that is a
    token's whole text is that string, not a copy), where a dict of id lists costs about a hundred
    bytes; a 151k-token vocabulary's tables stay a few MB (docs/decisions/lean-weights.md)."""
    keys: list[str]              # sorted; equal keys in id order
    ids: np.ndarray              # int32 [n]: each key's token
    starts: np.ndarray           # int16 [n]: where in its token's text the key starts

    @staticmethod
    def of(texts: list[str], spans: list[tuple[int, int, int]]) -> "TextIndex":
        """The index of ``texts[id][start:end]`` for each ``(id, start, end)`` in ``spans``
        (given in id order, which the stable sort keeps among equal keys)."""
        rows = sorted(((texts[t][s:e], t, s) for t, s, e in spans), key=lambda r: r[0])
        return TextIndex([r[0] for r in rows], np.array([r[1] for r in rows], dtype=np.int32),
                         np.array([r[2] for r in rows], dtype=np.int16))

    @staticmethod
    def from_arrays(texts: list[str], ids: np.ndarray, starts: np.ndarray,
                    lengths: np.ndarray) -> "TextIndex":
        """The index whose arrays ``arrays()`` gave (the keys sliced from ``texts`` again)."""
        keys = [texts[t][s:s + n] for t, s, n in zip(ids.tolist(), starts.tolist(),
                                                     lengths.tolist())]
        if keys != sorted(keys):
            raise ValueError("index keys out of order")
        return TextIndex(keys, ids.astype(np.int32), starts.astype(np.int16))

    def arrays(self) -> dict[str, np.ndarray]:
        return {"ids": self.ids, "starts": self.starts,
                "lengths": np.array([len(k) for k in self.keys], dtype=np.int16)}

    def __len__(self) -> int:
        return len(self.keys)

    def get(self, key: str) -> np.ndarray:
        """int32: the tokens whose key is ``key``."""
        lo = bisect.bisect_left(self.keys, key)
        return self.ids[lo:bisect.bisect_right(self.keys, key, lo)]

    def prefixed(self, prefix: str) -> np.ndarray | None:
        """``get(prefix)``, or None when no key starts with ``prefix`` (nor can any longer one)."""
        lo = bisect.bisect_left(self.keys, prefix)
        if lo == len(self.keys) or not self.keys[lo].startswith(prefix):
            return None
        return self.ids[lo:bisect.bisect_right(self.keys, prefix, lo)]


@dataclass(frozen=True, eq=False)
class TextSpans:
    """A slice of each of some tokens' texts, as arrays (no strings kept): for tables only
    ever scanned whole, where a sorted index's keys would cost their strings."""
    ids: np.ndarray              # int32 [n], in id order
    starts: np.ndarray           # int16 [n]
    lengths: np.ndarray          # int16 [n]

    @staticmethod
    def of(spans: list[tuple[int, int, int]]) -> "TextSpans":
        rows = np.array(spans, dtype=np.int64).reshape(-1, 3)
        return TextSpans(rows[:, 0].astype(np.int32), rows[:, 1].astype(np.int16),
                         (rows[:, 2] - rows[:, 1]).astype(np.int16))

    def arrays(self) -> dict[str, np.ndarray]:
        return {"ids": self.ids, "starts": self.starts, "lengths": self.lengths}

    def __len__(self) -> int:
        return len(self.ids)


@dataclass(eq=False)
class TokenVocabulary:
    size: int                     # mask length (the model's vocab size)
    texts: list[str]              # decoded text per id ('' beyond tokenizer)
    special: np.ndarray           # bool [size]: special / added tokens
    exact: TextIndex              # tokens by their text (no leading whitespace)
    lead_exact: TextIndex         # tokens with leading whitespace, by the text after it
    ends_with: TextIndex          # name then more (no leading whitespace), by the name
    lead_ends_with: TextIndex     # same after leading whitespace
    dotted: TextIndex             # ".name..." tokens by the name
    name_starts: TextSpans        # tokens starting a name after blanks or not: the name
    dotted_rest: np.ndarray       # bool [size]: a ".name" token with more after the name
    ws_only: np.ndarray           # ids of whitespace-only tokens
    ends_identifier: np.ndarray   # bool [size]: first char ends a name
    escape_plain: np.ndarray      # bool [size]: first char neither name nor ws
    escape_lead: np.ndarray       # bool [size]: ws, then not a name char
    name_only: np.ndarray         # bool [size]: name characters only
    target_end: np.ndarray        # bool [size]: what may end an assignment target (``=``,
                                  #   ``,``, ``:``; spaces first)
    name_target_end: np.ndarray   # bool [size]: name characters, then that
    blank: np.ndarray             # bool [size]: spaces or tabs only
    # free-name reads (``return |``): a token that starts a name, after blanks or not
    not_name_start: np.ndarray    # bool [size]: starts no name
    not_blank_name: np.ndarray    # bool [size]: is not blanks then a name
    blank_name_only: np.ndarray   # bool [size]: blanks, then name chars only
    assign_end: np.ndarray        # bool [size]: blanks, ``=`` (not ``==``)
    name_assign_end: np.ndarray   # bool [size]: name chars, then that
    blank_name_assign_end: np.ndarray  # bool [size]: blanks, name chars, then that
    string_start: np.ndarray      # bool [size]: blanks, a string prefix, a quote
    quote_start: np.ndarray       # bool [size]: starts with a quote

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
        return TokenVocabulary(size=size, texts=texts, special=special, **_indexed(texts, special))

    def text(self, token_id: int) -> str:
        return self.texts[token_id] if 0 <= token_id < self.size else ""


INDEXES = tuple(f.name for f in fields(TokenVocabulary) if f.type == "TextIndex")
SPANS = tuple(f.name for f in fields(TokenVocabulary) if f.type == "TextSpans")
ARRAYS = tuple(f.name for f in fields(TokenVocabulary) if f.type == "np.ndarray")


def _indexed(texts: list[str], special: np.ndarray) -> dict:
    """Every field of the vocabulary of ``texts`` but the texts themselves."""
    size = len(texts)
    spans = {name: [] for name in INDEXES + SPANS}      # name -> (id, start, end) of each
    ids = {name: [] for name in ("dotted_rest", "ws_only", "ends_identifier", "escape_plain",
                                 "escape_lead", "name_only", "target_end", "name_target_end",
                                 "blank", "name_start", "blank_name", "blank_name_only",
                                 "assign_end", "name_assign_end", "blank_name_assign_end",
                                 "string_start", "quote_start")}
    for tid, text in enumerate(texts):
        if not text or special[tid]:
            continue
        body = text.lstrip(WHITESPACE)
        lead = len(text) - len(body)
        if not body:
            ids["ws_only"].append(tid)
            ids["ends_identifier"].append(tid)
            if "\n" not in text and "\r" not in text:
                ids["blank"].append(tid)
            continue
        spans["lead_exact" if lead else "exact"].append((tid, lead, len(text)))
        head = ident_head(body)
        if len(head) < len(body):
            spans["lead_ends_with" if lead else "ends_with"].append((tid, lead, lead + len(head)))
        if lead or not is_ident_char(text[0]):
            ids["ends_identifier"].append(tid)
        if not head:
            ids["escape_lead" if lead else "escape_plain"].append(tid)
        if not lead and len(head) == len(body):
            ids["name_only"].append(tid)
        elif not lead and head and ends_target(text[len(head):]):
            ids["name_target_end"].append(tid)
        elif ends_target(text):
            ids["target_end"].append(tid)
        if text[0] == "." and len(text) > 1 and is_ident_char(text[1]):
            end = 1 + len(ident_head(text[1:]))
            spans["dotted"].append((tid, 1, end))
            if end < len(text):
                ids["dotted_rest"].append(tid)
        _classify_read(tid, text, ids, spans["name_starts"])

    def dense(name: str) -> np.ndarray:
        mask = np.zeros(size, dtype=bool)
        mask[np.asarray(ids[name], dtype=np.int64)] = True
        return mask

    real = np.array([bool(t) for t in texts], dtype=bool)          # not padding
    out = {name: TextIndex.of(texts, spans[name]) for name in INDEXES}
    out.update({name: TextSpans.of(spans[name]) for name in SPANS})
    out.update({name: dense(name) for name in ARRAYS if name in ids})
    out["ws_only"] = np.array(ids["ws_only"], dtype=np.int64)
    out["ends_identifier"] = out["ends_identifier"] | special
    out["not_name_start"] = ~dense("name_start") & real
    out["not_blank_name"] = ~dense("blank_name") & real
    return out


def _classify_read(tid: int, text: str, ids: dict, starts: list) -> None:
    body = text.lstrip(" \t")
    blanks = len(text) - len(body)
    if not body:
        return
    if body[0] in "'\"":
        if not blanks:
            ids["quote_start"].append(tid)
        ids["string_start"].append(tid)
    elif _STRING_START.match(body):
        ids["string_start"].append(tid)
    if _starts_name(body):
        ids["name_start"].append(tid)
        head = ident_head(body)
        starts.append((tid, blanks, blanks + len(head)))
        if blanks:
            ids["blank_name"].append(tid)
        if len(head) == len(body):
            if blanks:
                ids["blank_name_only"].append(tid)
        elif ends_assign(body[len(head):]):
            ids["blank_name_assign_end" if blanks else "name_assign_end"].append(tid)
    elif ends_assign(text):
        ids["assign_end"].append(tid)
