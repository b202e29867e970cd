"""The packed training data a GPU run reads: made here, carried to a machine with no network.

One epoch of the recipe's rows over the training corpus, in the bundled tokenizer, written as
``ROWS_FILE`` (uint16 [rows, seq_len + 1]), each evaluation set's rows, the held-out texts (so the
device drops its own copies of them), the tokenizer and a manifest; rows are cut to fit
``MAX_BYTES``."""
from __future__ import annotations

import argparse
import io
import json
import lzma
import time
from pathlib import Path

import numpy as np
from tokenizers import Tokenizer

from inkling.models import BUNDLED_MODEL_DIR
from inkling.models.corpus import CorpusFile, load_corpus
from inkling.evaluation.eval_sets import TOOLZ, held_out_packages
from inkling.evaluation.packages import (PACKAGES, assert_not_held_out, drop_held_out_copies,
                                         load_held_out_files, load_package_files, load_pinned)
from inkling.training.samples import build_rows, build_training_rows
from inkling.training.site_packages import DEVICE_ALLOW_LIST

ROWS_FILE, HELD_FILE, TEXTS_FILE, MANIFEST = (
    "train_rows.npy.xz", "held_out.npz", "held_out_texts.json.xz", "manifest.json")
MAX_BYTES = 56 * 2**20        # the packed folder; the working tree takes the rest of the carry
SEQ_LEN, SEED, FIM_RATE, REPO_RATE, STDLIB_REPEAT = 1024, 1234, 0.5, 0.25, 2
EVAL_ROWS = 160               # rows of each held-out set at most (seq_len + 1 ids each)


def held_out_sets(tok: Tokenizer, seq_len: int = SEQ_LEN) -> dict[str, np.ndarray]:
    """name -> uint16 rows [n, seq_len + 1] of each evaluation set: ``stdlib``, then packages."""
    sets = {"stdlib": build_rows([f.text for f in load_corpus().held_out], tok, seq_len,
                                 SEED + 999, FIM_RATE)}
    for p in held_out_packages():
        sets[p.name] = build_training_rows(load_pinned(p), tok, seq_len, SEED + 999,
                                           FIM_RATE, REPO_RATE)
    return {k: v[:EVAL_ROWS].astype(np.uint16) for k, v in sets.items()}


def held_out_texts() -> list[CorpusFile]:
    """Every held-out file: the standard library's and both evaluation sets' packages'."""
    return load_corpus().held_out + load_held_out_files()


def training_files(max_files: int = 0) -> tuple[list[CorpusFile], list[str], list[str]]:
    """(files, packages as name==version, why each copy was dropped): ``inkling train``'s corpus."""
    stdlib = load_corpus().train
    pkg = load_package_files()
    if max_files:
        stdlib, pkg = stdlib[:max_files], pkg[:max_files]
    pkg, dropped = drop_held_out_copies(pkg, held_out_texts())
    files = stdlib + pkg
    assert_not_held_out(files)
    return files, [f"{n}=={v}" for n, v in PACKAGES], dropped


def write_rows(rows: np.ndarray, path: Path) -> int:
    """rows as an xz-compressed .npy; returns the bytes written."""
    buf = io.BytesIO()
    np.save(buf, rows)
    path.write_bytes(lzma.compress(buf.getvalue(), preset=6))
    return path.stat().st_size


def read_rows(path: Path) -> np.ndarray:
    """The rows ``write_rows`` wrote: uint16 [n, seq_len + 1]."""
    return np.load(io.BytesIO(lzma.decompress(Path(path).read_bytes())))


def read_held_out_texts(folder: Path) -> list[CorpusFile]:
    """The held-out files ``pack`` wrote beside the rows."""
    return [CorpusFile(**d) for d in json.loads(lzma.decompress(
        (Path(folder) / TEXTS_FILE).read_bytes()))]


def _fit(rows: np.ndarray, path: Path, budget: int) -> tuple[np.ndarray, int]:
    """(rows cut to fit ``budget`` compressed, the bytes written)."""
    size = write_rows(rows, path)
    while size > budget:
        keep = int(len(rows) * budget / size * 0.97)
        print(f"pack: {size / 2**20:.1f} MiB over {budget / 2**20:.1f} MiB: keeping "
              f"{keep} of {len(rows)} rows", flush=True)
        rows = rows[:keep]
        size = write_rows(rows, path)
    return rows, size


def pack(out: Path, max_files: int = 0, seq_len: int = SEQ_LEN,
         max_bytes: int = MAX_BYTES) -> dict:
    """Write the packed data into ``out``; returns the manifest."""
    t0 = time.time()
    out.mkdir(parents=True, exist_ok=True)
    tok = Tokenizer.from_file(str(BUNDLED_MODEL_DIR / "tokenizer.json"))
    tok.save(str(out / "tokenizer.json"))
    files, packages, dropped = training_files(max_files)
    held = held_out_sets(tok, seq_len)
    np.savez_compressed(out / HELD_FILE, **held)
    texts = [{"relpath": f.relpath, "package": f.package, "text": f.text}
             for f in held_out_texts()]
    (out / TEXTS_FILE).write_bytes(lzma.compress(json.dumps(texts).encode()))
    rows = build_training_rows(files, tok, seq_len, SEED, FIM_RATE, REPO_RATE,
                               STDLIB_REPEAT).astype(np.uint16)   # [n, seq_len + 1]
    total = len(rows)
    fixed = sum((out / n).stat().st_size for n in ("tokenizer.json", HELD_FILE, TEXTS_FILE))
    rows, _ = _fit(rows, out / ROWS_FILE, max_bytes - fixed - 65536)
    manifest = {
        "tokenizer": "the bundled model's (models/inkling-tiny/tokenizer.json)",
        "seq_len": seq_len, "seed": SEED, "fim_rate": FIM_RATE, "repo_rate": REPO_RATE,
        "stdlib_repeat": STDLIB_REPEAT, "rows": len(rows), "rows_built": total,
        "tokens": int(len(rows) * seq_len), "train_files": len(files),
        "stdlib_files": sum(1 for f in files if not f.package), "packages": packages,
        "train_chars": sum(len(f.text) for f in files),
        "held_out_sets": {k: {"rows": len(v), "tokens": int(v.size)} for k, v in held.items()},
        "held_out_pins": ["stdlib held-out files"] + [p.pin for p in held_out_packages()],
        "tuning_package": TOOLZ.pin, "copies_dropped": dropped,
        "allow_list": list(DEVICE_ALLOW_LIST),
        "bytes": {n: (out / n).stat().st_size for n in
                  ("tokenizer.json", HELD_FILE, TEXTS_FILE, ROWS_FILE)},
    }
    manifest["bytes_total"] = sum(manifest["bytes"].values())
    (out / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    print(f"pack: {len(rows)} rows ({manifest['tokens'] / 1e6:.1f} M tokens) of "
          f"{len(files)} files, {manifest['bytes_total'] / 2**20:.1f} MiB -> {out} in "
          f"{time.time() - t0:.0f} s", flush=True)
    return manifest


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m inkling.training.packing",
                                 description="Pack the training data for a GPU run.")
    ap.add_argument("--out", default="packed", help="the folder to write (keep it out of git)")
    ap.add_argument("--max-files", type=int, default=0,
                    help="only the first N files of each source (quick checks; 0: all)")
    ap.add_argument("--seq-len", type=int, default=SEQ_LEN, help="tokens a row")
    ap.add_argument("--max-mib", type=float, default=MAX_BYTES / 2**20,
                    help="the packed folder's size at most (MiB): rows are cut to fit")
    a = ap.parse_args(argv)
    pack(Path(a.out), a.max_files, a.seq_len, int(a.max_mib * 2**20))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
