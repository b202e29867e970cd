"""A retrieval datastore for drafting (REST): a large fixed body of code indexed once, so that
common code drafts where the document and workspace have nothing. ``completion.datastore``:
``none``, ``corpus`` (the bundled model's training files) or a folder; corpus ids are cached,
built by one process per machine under a ``build_lock``: another that finds it building serves
without it (``Deferred``) and takes the cache up once written."""
from __future__ import annotations

import hashlib
import logging
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from inkling.models.corpus import load_corpus
from inkling.runtime import build_lock
from inkling.runtime.user_cache import cache_folder

from inkling.completion.progress import Progress
from inkling.completion.drafting.datastore_specs import validate_datastore_spec
from inkling.completion.drafting.suffix_index import SuffixIndex
from inkling.completion.drafting.workspace_index import WorkspaceIndex

log = logging.getLogger("inkling.datastore")
_BATCH = 64                       # files tokenized per progress step
LOCK_WAIT_S = 600.0               # a waiting caller builds alone past this (the cache is renamed in)
WHAT = "the corpus datastore's build"


class Building(Exception):
    """Another live process builds the cache at ``lock`` now (``holder``: who, in words)."""

    def __init__(self, lock: Path, holder: str):
        super().__init__(holder)
        self.lock, self.holder = lock, holder


@dataclass(frozen=True)
class Deferred:
    """A datastore another process is building: drafting goes on without it meanwhile."""
    spec: str
    lock: Path
    holder: str

    def summary(self) -> str:
        return (f"datastore {self.spec}: being built by {self.holder}; drafting goes on "
                f"without it and takes it up from the cache once written")

    def ready(self) -> bool:
        """Whether to build again: that builder has ended (the cache written, or it failed)."""
        return build_lock.holder(self.lock) is None


@dataclass
class Datastore:
    spec: str
    index: SuffixIndex | WorkspaceIndex   # both answer .matches
    files: int
    tokens: int
    seconds: float
    from_cache: bool = False

    def matches(self, context: list[int]):
        return self.index.matches(context)

    def found(self, context: list[int]):
        return self.index.found(context)

    def ngram_found(self, context: list[int]):
        """Occurrences of the context's last 4 (else 2) tokens, unextended: cheap for every step."""
        index = getattr(self.index, "index", self.index)     # a folder's WorkspaceIndex
        return index.found(context, extend=False)

    def nbytes(self) -> int:
        return getattr(self.index, "index", self.index).nbytes()

    def summary(self) -> str:
        how = "loaded from the cache" if self.from_cache else "indexed"
        return (f"datastore {self.spec}: {self.files} files, {self.tokens} tokens, "
                f"{self.nbytes() / 2**20:.0f} MiB, {how} in {self.seconds:.1f} s")


def cache_dir() -> Path:
    return cache_folder("datastore")


def build_datastore(spec: str, tokenizer_json: str, encode_batch, progress: Progress | None = None,
                    cache: Path | None = None, wait: bool = True) -> Datastore | Deferred | None:
    """The datastore ``spec`` names, or None; ``tokenizer_json`` keys the token-id ``cache``
    (default ``cache_dir()``), which is optional: a failure to write it is logged. Where
    another process builds that cache: wait for it, or (not ``wait``) Deferred at once."""
    validate_datastore_spec(spec)
    if spec == "none":
        return None
    t0 = time.perf_counter()
    if spec != "corpus":
        index = WorkspaceIndex(encode_batch)
        report = index.index_folders([Path(spec)], progress)
        return Datastore(spec, index, report.files, report.tokens, time.perf_counter() - t0)
    if progress:
        progress("reading the corpus", 0.0)
    files = load_corpus().train
    try:
        ids, from_cache = corpus_ids(files, tokenizer_json, encode_batch, progress,
                                     cache or cache_dir(), wait)
    except Building as busy:
        return Deferred(spec, busy.lock, busy.holder)
    if progress:
        progress("indexing the corpus", 0.95)
    index = SuffixIndex()
    index.put_many((f.relpath, seq) for f, seq in zip(files, ids))
    if progress:
        progress("corpus ready", 1.0)
    return Datastore(spec, index, len(files), len(index), time.perf_counter() - t0, from_cache)


def corpus_ids(files, tokenizer_json: str, encode_batch, progress: Progress | None,
               cache: Path, wait: bool = True) -> tuple[list, bool]:
    """(token ids of ``files``, whether from ``cache``), cached per tokenizer and texts and
    tokenized under the cache's lock; Building where another process holds it and not ``wait``."""
    path = corpus_cache(files, tokenizer_json, cache)
    ids = _load(path, len(files))
    if ids is not None:
        return ids, True
    fd = _lock(path.with_suffix(".lock"), wait, progress)
    try:
        ids = _load(path, len(files))            # written by the build waited for
        if ids is not None:
            return ids, True
        ids = []
        for i in range(0, len(files), _BATCH):
            ids += encode_batch([f.text for f in files[i:i + _BATCH]])
            if progress:
                progress("tokenizing the corpus", 0.9 * min(1.0, (i + _BATCH) / len(files)))
        _save(path, ids)
        return ids, False
    finally:
        if fd is not None:
            build_lock.release(fd)


def corpus_cache(files, tokenizer_json: str, cache: Path) -> Path:
    """The cache file of ``files``' ids under ``tokenizer_json`` (its lock: ``.lock`` beside)."""
    key = hashlib.sha256(tokenizer_json.encode())
    for f in files:
        key.update(f"{f.relpath}\0{hashlib.sha1(f.text.encode()).hexdigest()}\n".encode())
    return cache / f"corpus-{key.hexdigest()[:24]}.npz"


def _lock(lock: Path, wait: bool, progress: Progress | None) -> int | None:
    """The build's lock, waited for where ``wait``; None (build alone) past LOCK_WAIT_S or where
    the cache folder is unwritable; Building where it is held and not ``wait``."""
    def waiting(who: dict, waited: float) -> None:
        if progress:
            progress(f"waiting for the datastore build of {build_lock.describe(who)}: "
                     f"{waited:.0f} s", 0.0)
    try:
        if wait:
            return build_lock.wait_take(lock, LOCK_WAIT_S, WHAT, waiting)
        fd = build_lock.take(lock, WHAT)
        if fd is None:
            raise Building(lock, build_lock.describe(build_lock.holder(lock) or {}))
        return fd
    except OSError as exc:
        log.warning("datastore lock %s not taken (%s); building without it", lock, exc)
        return None


def _load(path: Path, n: int) -> list[np.ndarray] | None:
    try:
        with np.load(path) as z:
            flat, bounds = z["ids"], z["bounds"]
    except (OSError, KeyError, ValueError) as exc:
        if path.exists():
            log.warning("datastore cache %s unreadable (%s); tokenizing again", path, exc)
        return None
    if len(bounds) != n + 1:
        return None
    return [flat[bounds[i]:bounds[i + 1]] for i in range(n)]


def _save(path: Path, ids: list) -> None:
    bounds = np.zeros(len(ids) + 1, dtype=np.int64)
    bounds[1:] = np.cumsum([len(s) for s in ids])
    flat = np.concatenate([np.asarray(s, dtype=np.int32) for s in ids]) if ids else \
        np.zeros(0, np.int32)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp.npz")
        np.savez(tmp, ids=flat, bounds=bounds)
        tmp.replace(path)
    except OSError as exc:
        log.warning("datastore cache %s not written (%s)", path, exc)
