"""Token streams indexed by the hash of the k-gram ending at each position: a context's longest
matching tails are its last k tokens' hits extended backwards (vectorised), for drafting."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

SEPARATOR = -1
Found = tuple  # (stream, ends, lengths): a context's longest tails in one stream, never changed
ANCHORS = (4, 2)              # k-gram lengths looked up, longest first
MAX_MATCH = 32                # match lengths are counted up to this
FIRST_LOOK = 6                # context tokens past the anchor compared for every match
MAX_OCCURRENCES = 256         # the most recent occurrences of an anchor are examined
SCAN_BELOW = 256              # a shorter stream is scanned: indexing it costs more than it saves
_MUL = np.int64(1_000_003)
_SPANS_SEPARATOR = np.int64(-0x5EBA_4A7E)   # the hashed layout's key where a k-gram spans one


def _kgram_hashes(toks: np.ndarray, k: int) -> np.ndarray:
    """hash of toks[i-k+1 .. i] for every i >= k-1 (int64, wrapping): [n - k + 1]."""
    h = np.zeros(len(toks) - k + 1, dtype=np.int64)
    for j in range(k):
        h = h * _MUL + (toks[j:len(toks) - k + 1 + j].astype(np.int64) + 2)
    return h


def _hash_of(seq: list[int]) -> np.int64:
    """The hash _kgram_hashes gives the same tokens (int64 arithmetic, wrapping)."""
    h = 0
    for t in seq:
        h = (h * int(_MUL) + t + 2) & 0xFFFFFFFFFFFFFFFF
    return np.int64(h - (1 << 64) if h >= 1 << 63 else h)


@dataclass(frozen=True)
class Match:
    end: int          # position just after the matched tokens in the stream
    length: int       # how many context tokens match there


def next_counts(found: list[Found]) -> dict[int, int]:
    """token -> how often it followed the longest of the ``found`` matches."""
    if not found:
        return {}
    best = max(int(lengths.max()) for _, _, lengths in found)
    counts: dict[int, int] = {}
    for stream, ends, lengths in found:
        toks, n = np.unique(stream.toks[ends[lengths == best]], return_counts=True)
        for t, c in zip(toks.tolist(), n.tolist()):
            counts[t] = counts.get(t, 0) + c
    return counts


class _Sorted:
    """Positions sorted by the hash of the k-gram ending there."""

    def __init__(self, toks: np.ndarray, k: int):
        self.k = k
        if len(toks) < k:
            self.keys = np.zeros(0, np.int64)
            self.ends = np.zeros(0, np.int64)
            return
        hashes = _kgram_hashes(toks, k)
        valid = np.ones(len(hashes), bool)
        for j in range(k):                       # no k-gram spans a separator
            valid &= toks[j:len(toks) - k + 1 + j] != SEPARATOR
        idx = np.nonzero(valid)[0]
        order = np.argsort(hashes[idx], kind="stable")
        self.keys = hashes[idx][order]
        self.ends = (idx[order] + k).astype(np.int64)      # position after the k-gram

    def lookup(self, h: np.int64) -> np.ndarray:
        lo, hi = np.searchsorted(self.keys, h, "left"), np.searchsorted(self.keys, h, "right")
        return self.ends[max(lo, hi - MAX_OCCURRENCES):hi]


    def nbytes(self) -> int:
        return self.keys.nbytes + self.ends.nbytes


class _Hashed:
    """Each position's k-gram hash in stream order, unsorted: cheaper for a stream built per use."""

    def __init__(self, toks: np.ndarray, k: int):
        self.k = k
        if len(toks) < k:
            self.keys = np.zeros(0, np.int64)
            return
        self.keys = _kgram_hashes(toks, k)
        for j in range(k):                       # no k-gram spans a separator
            self.keys[toks[j:len(toks) - k + 1 + j] == SEPARATOR] = _SPANS_SEPARATOR

    def lookup(self, h: np.int64) -> np.ndarray:
        hits = np.flatnonzero(self.keys == h)
        return (hits[-MAX_OCCURRENCES:] + self.k).astype(np.int64)

    def nbytes(self) -> int:
        return self.keys.nbytes


LAYOUTS = {"sorted": _Sorted, "hashed": _Hashed}


class StreamIndex:
    """Token sequences joined by separators, with ``sorted`` k-gram indexes (large, seldom
    changed), ``hashed`` ones (rebuilt per completion) or none (``scan``, under SCAN_BELOW)."""

    def __init__(self, toks: np.ndarray, starts: np.ndarray, tags: list, layout: str = "sorted"):
        self.toks = toks
        self.starts = starts          # where each sequence begins in ``toks``
        self.tags = tags              # one tag per sequence (who it belongs to)
        self.sorted = {k: LAYOUTS[layout](toks, k) for k in ANCHORS} \
            if len(toks) >= SCAN_BELOW and layout != "scan" else {}

    def nbytes(self) -> int:
        """Memory held by the tokens and the k-gram indexes."""
        return self.toks.nbytes + sum(x.nbytes() for x in self.sorted.values())

    def _anchor_ends(self, tail: list[int]) -> np.ndarray:
        """Positions just after the k-gram ``tail``'s last MAX_OCCURRENCES hits, oldest first."""
        k = len(tail)
        if k in self.sorted:
            return self.sorted[k].lookup(_hash_of(tail))
        if len(self.toks) < k:
            return np.zeros(0, np.int64)
        windows = np.lib.stride_tricks.sliding_window_view(self.toks, k)      # [n - k + 1, k]
        hits = np.flatnonzero((windows == np.asarray(tail, np.int32)).all(axis=1))
        return (hits[-MAX_OCCURRENCES:] + k).astype(np.int64)

    @classmethod
    def of(cls, sequences: list, tags: list | None = None, layout: str = "sorted"
           ) -> "StreamIndex":
        parts, starts, at = [], [], 0
        for s in sequences:
            arr = np.asarray(s, dtype=np.int32)
            starts.append(at)
            parts += [arr, np.array([SEPARATOR], dtype=np.int32)]
            at += len(arr) + 1
        toks = np.concatenate(parts) if parts else np.zeros(0, np.int32)
        return cls(toks, np.asarray(starts, dtype=np.int64),
                   list(tags) if tags is not None else [None] * len(sequences), layout)

    def __len__(self) -> int:
        return len(self.toks)

    def tags_at(self, positions: np.ndarray) -> list:
        return [self.tags[i] for i in np.searchsorted(self.starts, positions, "right") - 1]

    def found(self, context: list[int]) -> list[Found]:
        ends, lengths = self.match_arrays(context)
        return [(self, ends, lengths)] if len(ends) else []

    def matches(self, context: list[int]) -> list[Match]:
        """Occurrences of the context's longest matching tails, with their lengths."""
        for k in ANCHORS:
            if len(context) < k:
                continue
            ends = self._anchor_ends(context[-k:])
            ends = ends[ends < len(self.toks)]
            ends = ends[self.toks[ends] != SEPARATOR]        # something must follow
            if len(ends):
                return self._extend(ends, context, k)
        return []

    def match_arrays(self, context: list[int], extend: bool = True
                     ) -> tuple[np.ndarray, np.ndarray]:
        """``matches`` as (ends, lengths) arrays; ``extend`` False: the anchor's hits only."""
        for k in ANCHORS:
            if len(context) < k:
                continue
            ends = self._anchor_ends(context[-k:])
            ends = ends[ends < len(self.toks)]
            ends = ends[self.toks[ends] != SEPARATOR]
            if len(ends):
                lengths = self._lengths(ends, context, k) if extend else \
                    np.full(len(ends), k, dtype=np.int64)
                return ends, lengths
        return np.zeros(0, np.int64), np.zeros(0, np.int64)

    def _extend(self, ends: np.ndarray, context: list[int], k: int) -> list[Match]:
        return [Match(int(e), int(n)) for e, n in zip(ends, self._lengths(ends, context, k))]

    def _lengths(self, ends: np.ndarray, context: list[int], k: int) -> np.ndarray:
        """How far back each match at ``ends`` [e] agrees with the context, up to MAX_MATCH."""
        ctx = np.asarray(context[-MAX_MATCH:], dtype=np.int32)[::-1]    # [c] ctx[j-1] = j-th last
        lengths = np.full(len(ends), k, dtype=np.int64)
        todo = np.arange(len(ends))
        lo = k
        for hi in (min(len(ctx), k + FIRST_LOOK), len(ctx)):
            if hi <= lo or not len(todo):
                break
            back = np.arange(lo + 1, hi + 1)                               # [b]
            at = ends[todo, None] - back[None, :]                          # [t, b]
            same = (at >= 0) & (self.toks[np.maximum(at, 0)] == ctx[None, lo:hi])
            agree = np.cumprod(same, axis=1).sum(axis=1, dtype=np.int64)  # leading agreements
            lengths[todo] += agree
            todo, lo = todo[agree == hi - lo], hi
        return lengths

    def continuation(self, end: int, limit: int) -> list[int]:
        """Up to ``limit`` tokens from ``end``, stopping at a separator."""
        seg = self.toks[end:end + limit]
        cut = np.nonzero(seg == SEPARATOR)[0]
        return seg[:cut[0]].tolist() if len(cut) else seg.tolist()


class SuffixIndex:
    """Keyed sequences in a base index and a tail of recent puts, merged when the tail grows."""

    def __init__(self, merge_fraction: float = 0.25, min_merge: int = 8192,
                 layout: str = "sorted"):
        self.layout = layout          # of its streams' k-gram indexes (StreamIndex)
        self._seqs: dict[str, tuple[int, np.ndarray]] = {}   # key -> (version, ids)
        self._version = 0
        self._base = StreamIndex.of([])
        self._tail = StreamIndex.of([])
        self._tail_keys: list[str] = []
        self.merge_fraction = merge_fraction
        self.min_merge = min_merge

    def __len__(self) -> int:
        return sum(len(ids) for _, ids in self._seqs.values())

    def nbytes(self) -> int:
        """Memory held by the token arrays and the k-gram indexes."""
        seqs = sum(ids.nbytes for _, ids in self._seqs.values())
        return seqs + sum(st.nbytes() for st in (self._base, self._tail))

    def __contains__(self, key: str) -> bool:
        return key in self._seqs

    def sequences(self) -> list[np.ndarray]:
        """The live sequences' token ids, oldest first."""
        return [ids for _, ids in self._seqs.values()]

    def put(self, key: str, ids) -> None:
        """Add or replace the sequence under ``key``."""
        self._version += 1
        self._seqs[key] = (self._version, np.asarray(ids, dtype=np.int32))
        if key not in self._tail_keys:
            self._tail_keys.append(key)
        tail_tokens = sum(len(self._seqs[k][1]) for k in self._tail_keys if k in self._seqs)
        if tail_tokens > max(self.min_merge, self.merge_fraction * len(self._base)):
            self.rebuild()
        else:
            self._tail = self._stream(self._tail_keys)

    def put_many(self, items) -> None:
        """Add or replace many (key, ids) sequences, then merge everything."""
        for key, ids in items:
            self._version += 1
            self._seqs[key] = (self._version, np.asarray(ids, dtype=np.int32))
        self.rebuild()

    def append(self, ids) -> None:
        self.put(f"#{self._version + 1}", ids)

    def remove(self, key: str) -> None:
        self._seqs.pop(key, None)

    def rebuild(self) -> None:
        self._base = self._stream(list(self._seqs))
        self._tail_keys = []
        self._tail = StreamIndex.of([])

    def _stream(self, keys: list[str]) -> StreamIndex:
        keys = [k for k in keys if k in self._seqs]
        return StreamIndex.of([self._seqs[k][1] for k in keys],
                              [(k, self._seqs[k][0]) for k in keys], self.layout)

    def found(self, context: list[int], extend: bool = True) -> list[Found]:
        """``StreamIndex.match_arrays`` per stream, live sequences only, as Found tuples."""
        out = []
        for stream in (self._base, self._tail):
            if not len(stream.toks):
                continue
            ends, lengths = stream.match_arrays(context, extend)
            if not len(ends):
                continue
            keep = self._live(stream)[np.searchsorted(stream.starts, ends - 1, "right") - 1]
            if keep.any():
                out.append((stream, ends[keep], lengths[keep]))
        return out

    def _live(self, stream: StreamIndex) -> np.ndarray:
        """Whether each of ``stream``'s sequences is still the current copy: [sequences]."""
        key = (self._version, len(self._seqs))          # changes with every put and remove
        if getattr(self, "_live_key", None) != key:
            self._live_key = key
            self._live_cache = {}
        live = self._live_cache.get(id(stream))
        if live is None:
            live = np.array([self._seqs.get(k, (None,))[0] == v for k, v in stream.tags], bool)
            self._live_cache[id(stream)] = live
        return live

    def matches(self, context: list[int]) -> list[tuple[StreamIndex, Match]]:
        """Matches in live sequences only (a replaced sequence's old copy is skipped)."""
        out = []
        for stream in (self._base, self._tail):
            found = stream.matches(context)
            if not found:
                continue
            tags = stream.tags_at(np.fromiter((m.end - 1 for m in found), np.int64, len(found)))
            out += [(stream, m) for m, (key, version) in zip(found, tags)
                    if self._seqs.get(key, (None,))[0] == version]
        return out


class LazyIndex:
    """A SuffixIndex made by ``build`` when first searched (a source is searched where it pays)."""

    def __init__(self, build: Callable[[], SuffixIndex]):
        self._build = build
        self._index: SuffixIndex | None = None

    @property
    def index(self) -> SuffixIndex:
        if self._index is None:
            self._index = self._build()
        return self._index

    def found(self, context: list[int], extend: bool = True) -> list[Found]:
        return self.index.found(context, extend)

    def matches(self, context: list[int]) -> list[tuple[StreamIndex, Match]]:
        return self.index.matches(context)
