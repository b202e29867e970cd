"""Training rows: files cut into chunks, half of them in fill-in-the-middle form.

A fill-in-the-middle sample picks a middle span the way completions are asked
for (the rest of a line from a cursor inside it, a whole line, a few lines, an
arbitrary span) and is written in prefix-suffix-middle or suffix-prefix-middle
order with equal chance. Prefix, suffix and middle are tokenized separately, as
the Engine tokenizes them at a cursor.
"""
from __future__ import annotations

import random
from dataclasses import dataclass

import numpy as np
from tokenizers import Tokenizer

from inkling.cache.fim import INKLING

CHUNK_CHARS = 3000


@dataclass(frozen=True)
class Piece:
    """One sample before tokenization: (text, is_special) parts in order."""
    parts: tuple[tuple[str, bool], ...]


def chunk_file(text: str, chunk_chars: int = CHUNK_CHARS) -> list[str]:
    """Cut at line boundaries into chunks of about ``chunk_chars`` characters."""
    lines = text.splitlines(keepends=True)
    chunks, cur, size = [], [], 0
    for line in lines:
        cur.append(line)
        size += len(line)
        if size >= chunk_chars:
            chunks.append("".join(cur))
            cur, size = [], 0
    if cur:
        chunks.append("".join(cur))
    return chunks


def _middle_span(chunk: str, rng: random.Random) -> tuple[int, int]:
    starts = [0] + [i + 1 for i, c in enumerate(chunk) if c == "\n" and i + 1 < len(chunk)]
    li = rng.randrange(len(starts))
    start = starts[li]
    line_end = chunk.find("\n", start)
    line_end = len(chunk) if line_end < 0 else line_end + 1
    kind = rng.random()
    if kind < 0.35:      # rest of the line from a cursor inside it
        a = rng.randint(start, max(start, line_end - 1))
        return a, line_end
    if kind < 0.65:      # one whole line
        return start, line_end
    if kind < 0.9:       # a few lines (a block)
        n = rng.randint(2, 8)
        end = starts[li + n] if li + n < len(starts) else len(chunk)
        return start, end
    a = rng.randrange(len(chunk))  # any span
    return a, min(len(chunk), a + rng.randint(1, 200))


def make_piece(chunk: str, rng: random.Random, fim_rate: float = 0.5) -> Piece:
    eot = (INKLING.end[0], True)
    if rng.random() >= fim_rate or len(chunk) < 2:
        return Piece(((chunk, False), eot))
    a, b = _middle_span(chunk, rng)
    pre, mid, suf = chunk[:a], chunk[a:b], chunk[b:]
    P, S, M = (INKLING.prefix, True), (INKLING.suffix, True), (INKLING.middle, True)
    if rng.random() < 0.5:
        parts = (P, (pre, False), S, (suf, False), M, (mid, False), eot)
    else:
        parts = (P, S, (suf, False), M, (pre, False), (mid, False), eot)
    return Piece(parts)


def encode_pieces(pieces: list[Piece], tok: Tokenizer) -> np.ndarray:
    """All pieces tokenized and concatenated into one stream of ids."""
    texts = [t for p in pieces for t, special in p.parts if not special]
    encoded = iter(tok.encode_batch(texts, add_special_tokens=False))
    out: list[int] = []
    for p in pieces:
        for text, special in p.parts:
            out.extend([tok.token_to_id(text)] if special else next(encoded).ids)
    return np.asarray(out, dtype=np.int32)


def build_rows(texts: list[str], tok: Tokenizer, seq_len: int, seed: int,
               fim_rate: float = 0.5) -> np.ndarray:
    """Rows of ``seq_len + 1`` ids (inputs and shifted labels): [rows, seq_len + 1]."""
    rng = random.Random(seed)
    chunks = [c for t in texts for c in chunk_file(t)]
    rng.shuffle(chunks)
    stream = encode_pieces([make_piece(c, rng, fim_rate) for c in chunks], tok)
    n = (len(stream) - 1) // seq_len
    idx = np.arange(n)[:, None] * seq_len + np.arange(seq_len + 1)[None, :]
    return stream[idx]
