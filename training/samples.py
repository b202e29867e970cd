"""Training rows: files cut into chunks, half of them in fill-in-the-middle form.

A fill-in-the-middle sample picks a middle span the way completions are asked
for (the rest of a line from a cursor inside it, a whole line, a few lines, an
arbitrary span) and is written in prefix-suffix-middle or suffix-prefix-middle
order with equal chance. Prefix, suffix and middle are tokenized separately, as
the Engine tokenizes them at a cursor.
"""
from __future__ import annotations

import random
import re
from dataclasses import dataclass

import numpy as np
from tokenizers import Tokenizer

from inkling.runtime.fim import INKLING

from inkling.models.corpus import CorpusFile

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


# ---------------------------------------------------------------------------
# Repository-level samples, in the repository-context block's format (Qwen2.5-Coder's, no
# <|repo_name|>): <|file_sep|>{path}\n{text} per neighbour (its outline or a cut of lines, the
# files the target imports first), then <|file_sep|>{target path}\n{plain or FIM sample}.

REPO_RATE = 0.25                 # share of the eligible chunks written as repository samples
REPO_CONTEXT_CHARS = 1600        # neighbours' text at most
REPO_TARGET_CHARS = 1800         # the target chunk is cut here; its rest is a plain sample
_HEADER = re.compile(r"^\s*(?:async\s+def|def|class)\s+\w")
_CONSTANT = re.compile(r"^[A-Z][A-Z0-9_]*\s*(?::[^=]+)?=")
_IMPORT = re.compile(r"^\s*(?:from\s+(\.*[\w.]*)\s+import\s+([\w, ]+)|import\s+([\w.]+))", re.M)


def outline(text: str, max_chars: int = 800) -> str:
    """The file's outline: class and def headers (whole) and module-level constants."""
    out, size = [], 0
    lines = text.split("\n")
    i = 0
    while i < len(lines) and size < max_chars:
        line = lines[i]
        if _HEADER.match(line):
            block = [line]
            while not block[-1].rstrip().endswith(":") and i + 1 < len(lines) and len(block) < 8:
                i += 1
                block.append(lines[i])
            out.extend(block)
            size += sum(len(b) + 1 for b in block)
        elif _CONSTANT.match(line) and len(line) <= 120:
            out.append(line)
            size += len(line) + 1
        i += 1
    return "\n".join(out) + "\n" if out else ""


def _module_name(f: CorpusFile) -> str:
    mod = f.relpath[:-3].replace("/", ".")
    return mod[:-9] if mod.endswith(".__init__") else mod


def _imported(f: CorpusFile, by_module: dict[str, int]) -> list[int]:
    """Indices of the group's files that ``f`` imports, in import order."""
    here = _module_name(f).split(".")
    if not f.relpath.endswith("__init__.py"):
        here = here[:-1]
    found: list[int] = []
    for m in _IMPORT.finditer(f.text):
        if m.group(3):
            names = [m.group(3)]
        else:
            base = m.group(1)
            dots = len(base) - len(base.lstrip("."))
            if dots:
                root = here[:len(here) - (dots - 1)] if dots > 1 else here
                base = ".".join(root + ([base.lstrip(".")] if base.lstrip(".") else []))
            names = [base] + [f"{base}.{n.strip()}" for n in m.group(2).split(",") if n.strip()]
        for name in names:
            j = by_module.get(name)
            if j is not None and j not in found:
                found.append(j)
    return found


def _group_key(f: CorpusFile) -> str | None:
    if f.package:
        return f.package
    return f.relpath.split("/")[0] if "/" in f.relpath else None


def _neighbour_text(f: CorpusFile, rng: random.Random, budget: int) -> str:
    if rng.random() < 0.5:
        text = outline(f.text, budget)
        if text:
            return text
    lines = f.text.split("\n")
    n = rng.randint(8, 40)
    a = rng.randrange(max(1, len(lines) - n + 1))
    text = "\n".join(lines[a:a + n]).rstrip("\n") + "\n"
    return text[:budget].rsplit("\n", 1)[0] + "\n" if len(text) > budget else text


@dataclass
class RepoIndex:
    """Per file: the files of its group (package) it imports, and the group's others."""
    imported: list[list[int]]
    others: list[list[int]]

    @classmethod
    def build(cls, files: list[CorpusFile]) -> "RepoIndex":
        groups: dict[str, list[int]] = {}
        for i, f in enumerate(files):
            key = _group_key(f)
            if key is not None:
                groups.setdefault(key, []).append(i)
        imported: list[list[int]] = [[] for _ in files]
        others: list[list[int]] = [[] for _ in files]
        for members in groups.values():
            if len(members) < 2:
                continue
            by_module = {_module_name(files[i]): i for i in members}
            for i in members:
                imported[i] = [j for j in _imported(files[i], by_module) if j != i]
                others[i] = [j for j in members if j != i and j not in imported[i]]
        return cls(imported, others)

    def eligible(self, i: int) -> bool:
        return bool(self.imported[i] or self.others[i])


def make_repo_piece(files: list[CorpusFile], index: RepoIndex, fi: int, chunk: str,
                    rng: random.Random, fim_rate: float) -> Piece:
    """A repository-level sample: 1 to 4 neighbours of file ``fi``, then the chunk."""
    n = rng.randint(1, 4)
    imported, others = index.imported[fi], index.others[fi]
    picked = imported[:rng.randint(0, min(n, len(imported)))]
    picked += rng.sample(others, min(n - len(picked), len(others)))
    if len(picked) < n:
        picked += [j for j in imported if j not in picked][:n - len(picked)]
    parts: list[tuple[str, bool]] = []
    budget = REPO_CONTEXT_CHARS
    for j in picked:        # the first picked (an imported file, if any) sits next to the target
        if budget < 100:
            break
        text = _neighbour_text(files[j], rng, min(budget, 800))
        if not text.strip():
            continue
        budget -= len(text)
        parts = [(INKLING.file_sep, True), (f"{files[j].relpath}\n{text}", False)] + parts
    target = make_piece(chunk, rng, fim_rate).parts
    head = f"{files[fi].relpath}\n"
    if len(target) == 2:    # plain: the path and the text are one text
        return Piece(tuple(parts) + ((INKLING.file_sep, True), (head + target[0][0], False),
                                     target[1]))
    return Piece(tuple(parts) + ((INKLING.file_sep, True), (head, False)) + target)


def _split_target(chunk: str) -> tuple[str, str]:
    """The chunk cut at the line end nearest REPO_TARGET_CHARS: (target, rest)."""
    if len(chunk) <= REPO_TARGET_CHARS:
        return chunk, ""
    cut = chunk.find("\n", REPO_TARGET_CHARS)
    if cut < 0 or cut + 1 >= len(chunk):
        return chunk, ""
    return chunk[:cut + 1], chunk[cut + 1:]


def make_pieces(files: list[CorpusFile], seed: int, fim_rate: float = 0.5,
                repo_rate: float = REPO_RATE, stdlib_repeat: int = 1) -> list[Piece]:
    """One epoch's samples: every file's chunks shuffled (stdlib ones ``stdlib_repeat`` times),
    a ``repo_rate`` share of those with neighbours as repository-level samples."""
    rng = random.Random(seed)
    index = RepoIndex.build(files) if repo_rate > 0 else None
    chunks = [(i, c) for i, f in enumerate(files) for c in chunk_file(f.text)
              for _ in range(1 if f.package else stdlib_repeat)]
    rng.shuffle(chunks)
    pieces: list[Piece] = []
    for fi, chunk in chunks:
        if index is not None and index.eligible(fi) and rng.random() < repo_rate:
            target, rest = _split_target(chunk)
            pieces.append(make_repo_piece(files, index, fi, target, rng, fim_rate))
            if rest:
                pieces.append(make_piece(rest, rng, fim_rate))
        else:
            pieces.append(make_piece(chunk, rng, fim_rate))
    return pieces


def build_training_rows(files: list[CorpusFile], tok: Tokenizer, seq_len: int, seed: int,
                        fim_rate: float = 0.5, repo_rate: float = REPO_RATE,
                        stdlib_repeat: int = 1) -> np.ndarray:
    """An epoch's rows of ``seq_len + 1`` ids, deterministic in (files, tokenizer, seed)."""
    stream = encode_pieces(make_pieces(files, seed, fim_rate, repo_rate, stdlib_repeat), tok)
    n = (len(stream) - 1) // seq_len
    idx = np.arange(n)[:, None] * seq_len + np.arange(seq_len + 1)[None, :]
    return stream[idx]
