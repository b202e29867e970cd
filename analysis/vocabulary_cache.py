"""The monitor's ``TokenVocabulary`` kept in the user cache per tokenizer, so that a large
vocabulary is indexed once, not at every start: one .npz of its arrays and one JSON text of
the rest, read with ``allow_pickle=False`` (nothing loaded runs code), named and checked by
a hash of the tokenizer's JSON, the mask size and ``FORMAT``; anything else rebuilds."""
from __future__ import annotations

import contextlib
import dataclasses
import gc
import hashlib
import json
import logging
import os
from pathlib import Path

import numpy as np

from inkling.runtime.user_cache import cache_folder

from inkling.analysis.vocabulary import TokenVocabulary

log = logging.getLogger(__name__)

FORMAT = 1                  # bump when TokenVocabulary's fields or their meaning change
ARRAYS = tuple(f.name for f in dataclasses.fields(TokenVocabulary)
               if f.name == "special" or f.default is None)       # the numpy fields
SETS = ("dotted_prefixes", "prefixes", "lead_prefixes")           # sets of strings
ID_LISTS = ("exact", "lead_exact", "ends_with", "lead_ends_with")  # text -> [ids]
ROWS = {"dotted": (int, str, bool), "name_starts": (int, str, bool, bool)}  # tuple lists


def vocabulary_key(tokenizer_json: str, size: int) -> str:
    """The hex key of a vocabulary built from ``tokenizer_json`` padded to ``size`` ids."""
    h = hashlib.sha256(f"token-vocabulary {FORMAT} {size}\n".encode())
    h.update(tokenizer_json.encode())
    return h.hexdigest()[:32]


def cached_vocabulary(tokenizer, size: int | None = None,
                      folder: Path | None = None) -> tuple[TokenVocabulary, bool]:
    """(the vocabulary of ``tokenizer`` padded to ``size``, whether read from ``folder``,
    default the user cache's); built and stored where not cached (a failed write is logged)."""
    n = tokenizer.get_vocab_size(with_added_tokens=True)
    key = vocabulary_key(tokenizer.to_str(), max(size or n, n))
    path = (folder or cache_folder("vocabulary")) / f"vocabulary-{key}.npz"
    with _no_collection():         # its many small lists would trigger full collections
        found = load(path, key)
        if found is not None:
            return found, True
        vocab = TokenVocabulary.from_tokenizer(tokenizer, size)
    save(vocab, path, key)
    return vocab, False


@contextlib.contextmanager
def _no_collection():
    """The cyclic collector paused (as it was before, after)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def save(vocab: TokenVocabulary, path: Path, key: str) -> None:
    """Store ``vocab`` at ``path`` under ``key`` whole (a temporary file, then a rename): the
    ids as arrays, the strings as one JSON text, since JSON is slow at many small lists."""
    arrays = {name: getattr(vocab, name) for name in ARRAYS}
    strings = {"key": key, "size": vocab.size, "max_len": vocab.max_len, "texts": vocab.texts}
    strings.update({name: sorted(getattr(vocab, name)) for name in SETS})
    for name in ID_LISTS:
        table = getattr(vocab, name)
        strings[name] = list(table)
        arrays.update(_ragged(name, list(table.values())))
    heads = vocab.dotted_heads
    strings["dotted_heads"] = list(heads)
    for side in (0, 1):
        arrays.update(_ragged(f"dotted_heads.{side}", [ids[side] for ids in heads.values()]))
    for name, types in ROWS.items():
        rows = getattr(vocab, name)
        for col, kind in enumerate(types):
            values = [row[col] for row in rows]
            if kind is str:
                strings[f"{name}.{col}"] = values
            else:
                arrays[f"{name}.{col}"] = np.array(values, dtype=np.int64 if kind is int else bool)
    text = json.dumps(strings, ensure_ascii=False, separators=(",", ":"))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.stem}.{os.getpid()}.tmp.npz")
        np.savez(tmp, strings=np.frombuffer(text.encode(), dtype=np.uint8), **arrays)
        tmp.replace(path)
    except OSError as exc:
        log.warning("vocabulary cache %s not written (%s)", path, exc)


def load(path: Path, key: str) -> TokenVocabulary | None:
    """The vocabulary stored at ``path`` under ``key``; None where missing, unreadable, of
    another key or incomplete (logged where the file exists)."""
    try:
        with np.load(path, allow_pickle=False) as z:
            arrays = {name: z[name] for name in z.files}
        strings = json.loads(arrays.pop("strings").tobytes().decode())
        if strings["key"] != key:
            return None
        return _vocabulary(strings, arrays)
    except FileNotFoundError:
        return None
    except (OSError, EOFError, ValueError, KeyError, TypeError, IndexError) as exc:
        log.warning("vocabulary cache %s unreadable (%s); indexing again", path, exc)
        return None


def _vocabulary(strings: dict, arrays: dict) -> TokenVocabulary:
    fields = {name: arrays[name] for name in ARRAYS}
    fields.update(size=strings["size"], max_len=strings["max_len"], texts=strings["texts"])
    fields.update({name: set(strings[name]) for name in SETS})
    for name in ID_LISTS:
        fields[name] = dict(zip(strings[name], _lists(arrays, name), strict=True))
    with_rest, without = _lists(arrays, "dotted_heads.0"), _lists(arrays, "dotted_heads.1")
    fields["dotted_heads"] = dict(zip(strings["dotted_heads"], zip(with_rest, without,
                                                                   strict=True), strict=True))
    for name, types in ROWS.items():
        cols = [strings[f"{name}.{c}"] if kind is str else arrays[f"{name}.{c}"].tolist()
                for c, kind in enumerate(types)]
        fields[name] = list(zip(*cols, strict=True))
    vocab = TokenVocabulary(**fields)
    if len(vocab.texts) != vocab.size or any(len(a) != vocab.size for a in (
            vocab.special, vocab.ends_identifier, vocab.name_only)):
        raise ValueError(f"sizes differ from {vocab.size} ids")
    return vocab


def _ragged(name: str, lists: list[list[int]]) -> dict[str, np.ndarray]:
    """``lists`` as two arrays: the ids end to end, and where each list starts and ends."""
    bounds = np.zeros(len(lists) + 1, dtype=np.int64)
    bounds[1:] = np.cumsum([len(ids) for ids in lists])
    flat = [i for ids in lists for i in ids]
    return {f"{name}.ids": np.array(flat, dtype=np.int64), f"{name}.bounds": bounds}


def _lists(arrays: dict, name: str) -> list[list[int]]:
    ids, b = arrays[f"{name}.ids"].tolist(), arrays[f"{name}.bounds"].tolist()
    return [ids[b[i]:b[i + 1]] for i in range(len(b) - 1)]
