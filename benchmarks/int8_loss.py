"""Held-out loss of model folders (float and int8 weights of the same model), side by side.

    python benchmarks/int8_loss.py FOLDER [FOLDER ...] [--rows 40]

The validation rows ``inkling train`` evaluates on (training/data.py: the held-out
standard-library files, toolz 1.0.0), tokenized with the first folder's tokenizer; each
folder loaded by the runtime's loader (int8 folders dequantized) and run by transformers'
forward in float32. Prints the mean next-token loss of each set and its difference from
the first folder.
"""
from __future__ import annotations

import argparse

import numpy as np
import torch
from tokenizers import Tokenizer

from inkling.runtime.model_loader import load_runtime
from inkling.models.corpus import load_corpus
from inkling.evaluation.packages import load_held_out_package
from inkling.training.samples import build_rows, build_training_rows
from inkling.training.training import _eval_loss

SEQ, SEED = 1024, 1234 + 999


def held_out_rows(tok: Tokenizer, rows: int) -> dict[str, np.ndarray]:
    return {"stdlib": build_rows([f.text for f in load_corpus().held_out], tok, SEQ, SEED,
                                 0.5)[:rows],
            "toolz": build_training_rows(load_held_out_package(), tok, SEQ, SEED, 0.5,
                                         0.25)[:rows]}


def losses(folder: str, sets: dict[str, np.ndarray]) -> dict[str, float]:
    rt = load_runtime(folder, device="cpu", dtype="float32", forward="reference")
    return {k: _eval_loss(rt.model, v, torch.device("cpu"), 4) for k, v in sets.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folders", nargs="+")
    ap.add_argument("--rows", type=int, default=40)
    a = ap.parse_args()
    sets = held_out_rows(Tokenizer.from_file(f"{a.folders[0]}/tokenizer.json"), a.rows)
    base = None
    for folder in a.folders:
        got = losses(folder, sets)
        base = base or got
        print(f"{folder}: " + ", ".join(f"{k} {v:.4f} ({v - base[k]:+.4f})"
                                          for k, v in got.items()), flush=True)


if __name__ == "__main__":
    main()
