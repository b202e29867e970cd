"""What ``inkling train`` trains and validates on: the training files (the standard library
and the pinned packages, less every held-out file and any copy of one), the held-out rows,
and the rows of each epoch, built on demand."""
from __future__ import annotations

import hashlib
import time

import numpy as np
from tokenizers import Tokenizer

from inkling.evaluation import packages
from inkling.models.corpus import CorpusFile, load_corpus
from inkling.training.samples import build_rows, build_training_rows
from inkling.training.train_options import TrainOptions


class Data:
    """The training files and the held-out sets; rows of an epoch are built on demand,
    deterministically from (files, tokenizer, seed + epoch)."""

    def __init__(self, o: TrainOptions, tok: Tokenizer):
        if o.stdlib_repeat < 1:
            raise ValueError(f"--stdlib-repeat must be at least 1, got {o.stdlib_repeat}")
        corpus = load_corpus()
        stdlib = corpus.train[:o.max_files] if o.max_files else corpus.train
        files = list(stdlib)
        self.packages = []
        pkg_held = []
        self.copies_dropped: list[str] = []
        if o.packages:
            pkg_files = packages.load_package_files()
            if o.max_files:
                pkg_files = pkg_files[:o.max_files]
            pkg_held = packages.load_held_out_package()      # its rows: the package validation loss
            pkg_files, self.copies_dropped = packages.drop_held_out_copies(
                pkg_files, corpus.held_out + packages.load_held_out_files())    # both sets' packages
            files += pkg_files
            self.packages = [f"{n}=={v}" for n, v in packages.PACKAGES]
        packages.assert_not_held_out(files)
        self.files, self.o, self.tok = files, o, tok
        self.stdlib_files, self.held_out = len(stdlib), corpus.held_out
        self.held_out_package = (f"{packages.HELD_OUT_PACKAGE[0]}=={packages.HELD_OUT_PACKAGE[1]}"
                                 if pkg_held else "")
        # the stdlib validation rows keep one recipe so losses compare across runs
        self.val_rows = build_rows([f.text for f in corpus.held_out], tok, o.seq_len,
                                   o.seed + 999, o.fim_rate)[:o.eval_rows]
        self.val_rows_pkg = (build_training_rows(pkg_held, tok, o.seq_len, o.seed + 999,
                                                 o.fim_rate, o.repo_rate)[:o.eval_rows]
                             if pkg_held else None)
        self.fingerprint = fingerprint(files, tok, o)
        self.chars = sum(len(f.text) for f in files)
        self._epoch, self._rows = None, None
        self._report(bool(pkg_held))

    def _report(self, pkg_held: bool) -> None:
        o, files = self.o, self.files
        print(f"data: {len(files)} training files ({self.chars / 1e6:.1f} M chars: "
              f"{self.stdlib_files} stdlib files"
              f"{f' (x{o.stdlib_repeat} an epoch)' if o.stdlib_repeat > 1 else ''} and "
              f"{len(files) - self.stdlib_files} files of "
              f"{len(self.packages)} packages), {len(self.held_out)} held-out stdlib files"
              f"{f', held-out package {self.held_out_package}' if pkg_held else ''}; "
              f"fingerprint {self.fingerprint}", flush=True)
        for why in self.copies_dropped:
            print(f"data: not training on {why}", flush=True)

    def rows(self, epoch: int) -> np.ndarray:
        if self._epoch != epoch:
            t = time.time()
            self._rows = build_training_rows(self.files, self.tok, self.o.seq_len,
                                             self.o.seed + epoch, self.o.fim_rate, self.o.repo_rate,
                                             self.o.stdlib_repeat)
            self._epoch = epoch
            print(f"epoch {epoch}: {len(self._rows)} rows of {self.o.seq_len} tokens "
                  f"({len(self._rows) * self.o.seq_len / 1e6:.1f} M tokens) built in "
                  f"{time.time() - t:.0f} s", flush=True)
        return self._rows


def fingerprint(files: list[CorpusFile], tok: Tokenizer, o: TrainOptions) -> str:
    """What a resume checks the data against: the files, the tokenizer and the sampling."""
    h = hashlib.sha256()
    for f in files:
        h.update(f"{f.package}\0{f.relpath}\0{len(f.text)}\0".encode())
        h.update(hashlib.sha256(f.text.encode()).digest())
    h.update(hashlib.sha256(tok.to_str().encode()).digest())
    h.update(f"{o.seq_len} {o.fim_rate} {o.repo_rate}".encode())
    if o.stdlib_repeat != 1:            # the data of earlier runs keeps its fingerprint
        h.update(f" stdlib x{o.stdlib_repeat}".encode())
    return h.hexdigest()[:16]
