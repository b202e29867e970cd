"""The training corpus: the Python standard library of the running interpreter.

The file list is deterministic (sorted relative paths, fixed exclusion rules) and
HELD_OUT_FRACTION of the files, chosen by a hash of their path, are held out for validation.
"""
from __future__ import annotations

import hashlib
import sysconfig
from dataclasses import dataclass
from pathlib import Path

HELD_OUT_FRACTION = 0.02
MAX_FILE_BYTES = 250_000
_TEST_DIRS = {"test", "tests", "idle_test"}
_SKIP_TOP = {"site-packages", "lib-dynload", "__pycache__"}


@dataclass(frozen=True)
class CorpusFile:
    relpath: str
    text: str
    package: str = ""   # "name==version" for a third-party file, "" for the standard library


@dataclass(frozen=True)
class Corpus:
    root: Path
    train: list[CorpusFile]
    held_out: list[CorpusFile]

    @property
    def train_chars(self) -> int:
        return sum(len(f.text) for f in self.train)


def stdlib_root() -> Path:
    return Path(sysconfig.get_paths()["stdlib"])


def _excluded(rel: Path) -> bool:
    parts = rel.parts
    if parts[0] in _SKIP_TOP or parts[0].startswith("config-"):
        return True
    if any(p in _TEST_DIRS or p == "__pycache__" for p in parts[:-1]):
        return True
    name = parts[-1]
    return name.startswith("test_") or name.startswith("_sysconfigdata")


def _read_source(path: Path) -> str | None:
    if path.stat().st_size > MAX_FILE_BYTES:
        return None
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return None
    if "gencodec.py" in text[:600]:  # generated charmap tables, not code
        return None
    return text.replace("\r\n", "\n")


def _path_hash(relpath: str) -> str:
    return hashlib.sha256(relpath.encode()).hexdigest()


def load_corpus(root: Path | None = None) -> Corpus:
    """Read the corpus; held out: the HELD_OUT_FRACTION of files with the smallest path hash."""
    root = root or stdlib_root()
    files: list[CorpusFile] = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        if _excluded(rel):
            continue
        text = _read_source(path)
        if text and text.strip():
            files.append(CorpusFile(rel.as_posix(), text))
    n_held = max(1, round(HELD_OUT_FRACTION * len(files)))
    by_hash = sorted(files, key=lambda f: _path_hash(f.relpath))
    held = {f.relpath for f in by_hash[:n_held]}
    train = [f for f in files if f.relpath not in held]
    held_out = [f for f in files if f.relpath in held]
    return Corpus(root, train, held_out)
