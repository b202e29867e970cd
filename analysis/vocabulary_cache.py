"""The monitor's ``TokenVocabulary`` kept in the user cache per tokenizer, so that a large
vocabulary is indexed once, not at every start: one .npz of its arrays and one JSON text of
the rest, read with ``allow_pickle=False`` (nothing loaded runs code), named and checked by
a hash of the tokenizer's JSON, the mask size and ``FORMAT``; anything else rebuilds."""
from __future__ import annotations

import contextlib
import gc
import hashlib
import json
import logging
import os
from pathlib import Path

import numpy as np

from inkling.runtime.user_cache import cache_folder

from inkling.analysis.vocabulary import (ARRAYS, INDEXES, SPANS, TextIndex, TextSpans,
                                         TokenVocabulary)

log = logging.getLogger(__name__)

FORMAT = 2                  # bump when TokenVocabulary's fields or their meaning change


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
    with _no_collection():         # its many strings would trigger full collections
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
    """Store ``vocab`` at ``path`` under ``key`` whole (a temporary file, then a rename): its
    arrays, each index and span table as its ids, starts and lengths, and the texts as one
    JSON text."""
    arrays = {name: getattr(vocab, name) for name in ARRAYS}
    for name in INDEXES + SPANS:
        arrays.update({f"{name}.{part}": a for part, a in getattr(vocab, name).arrays().items()})
    strings = {"key": key, "size": vocab.size, "texts": vocab.texts}
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
    texts, size = strings["texts"], strings["size"]
    fields = {name: arrays[name] for name in ARRAYS}
    for name in INDEXES:
        fields[name] = TextIndex.from_arrays(texts, *(arrays[f"{name}.{part}"] for part in
                                                      ("ids", "starts", "lengths")))
    for name in SPANS:
        fields[name] = TextSpans(*(arrays[f"{name}.{part}"] for part in ("ids", "starts", "lengths")))
    vocab = TokenVocabulary(size=size, texts=texts, **fields)
    if len(texts) != size or any(len(a) != size for a in (
            vocab.special, vocab.ends_identifier, vocab.name_only, vocab.dotted_rest)):
        raise ValueError(f"sizes differ from {size} ids")
    return vocab
