"""A training run within a wall-clock budget, made for a GPU lent for minutes.

Trains ``--init``'s weights or a ``--shape`` from scratch on the packed rows (``packing.py``) and
any ``--allow-list`` packages, on a warmup-stable-decay schedule timed by the clock so the run
ends annealed whatever the device's speed. ``OUT`` gets ``result.json`` (held-out losses at start
and end), the loss curve, and the model folder as tar parts of ``PART_BYTES`` so it comes back
from the device (``docs/training.md``)."""
from __future__ import annotations

import argparse
import csv
import io
import json
import math
import tarfile
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from tokenizers import Tokenizer
from transformers import LlamaConfig, LlamaForCausalLM

from inkling.training import packing
from inkling.training.samples import build_training_rows
from inkling.training.site_packages import DEVICE_ALLOW_LIST, read_installed
from inkling.training.tokenizer_recipe import save_tokenizer
from inkling.training.train_options import TrainOptions
from inkling.training.training import _eval_loss, adamw, device_for, llama_config, optimizer_step

SHAPES = {   # hidden, layers, heads, kv heads, intermediate
    "tiny": (64, 2, 4, 2, 172),          # the CPU check of the script
    "bundled": (256, 6, 8, 2, 688),      # the shipped model's shape
    "x4": (512, 8, 8, 2, 1152),
}
WARMUP_STEPS, PART_BYTES, MAX_PARTS = 100, 15 * 2**20, 4
LOG_EVERY = 20


def model_config(shape: str, vocab: int, max_positions: int = 2048) -> LlamaConfig:
    if shape not in SHAPES:
        raise ValueError(f"--shape {shape!r}: one of {', '.join(SHAPES)}")
    hidden, layers, heads, kv, inter = SHAPES[shape]
    return llama_config(vocab, hidden, inter, layers, heads, kv, max_positions)


def wsd_lr(peak: float, step: int, frac: float, decay: float) -> float:
    """Warm-up, the peak until ``1 - decay`` of the budget, then linear to zero at ``frac`` 1."""
    warm = min(1.0, (step + 1) / WARMUP_STEPS)
    return peak * warm * min(1.0, max(0.0, (1.0 - frac) / decay))


def load_model(a, vocab: int) -> LlamaForCausalLM:
    """The model to train: ``--init``'s weights, or ``--shape`` from scratch."""
    if a.init:
        if a.shape:
            raise ValueError("--shape is for --scratch: --init takes the folder's own shape")
        return LlamaForCausalLM.from_pretrained(a.init, dtype=torch.float32)
    torch.manual_seed(a.seed)
    return LlamaForCausalLM(model_config(a.shape or "bundled", vocab))


def check_fits(model) -> int:
    """The float16 weights' bytes; an error where the folder would not come back."""
    size = 2 * sum(p.numel() for p in model.parameters())
    if size > MAX_PARTS * PART_BYTES - 2**20:
        raise ValueError(f"{size / 2**20:.0f} MiB of float16 weights: more than the "
                         f"{MAX_PARTS} parts of {PART_BYTES >> 20} MiB that come back")
    return size


def tokenizer_for(a) -> Tokenizer:
    """The packed data's tokenizer; ``--init``'s must be the same one."""
    packed = (Path(a.data) / "tokenizer.json").read_text()
    if a.init and json.loads((Path(a.init) / "tokenizer.json").read_text()) != json.loads(packed):
        raise ValueError(f"--init {a.init}: its tokenizer is not the packed data's "
                         f"({a.data}/tokenizer.json)")
    return Tokenizer.from_str(packed)


def training_rows(a, tok: Tokenizer, seq: int) -> tuple[np.ndarray, dict]:
    """(uint16 rows [n, seq + 1] of the packed and allow-listed data, the data's report)."""
    rows = packing.read_rows(Path(a.data) / packing.ROWS_FILE)[:, :seq + 1]
    report = {"packed_rows": len(rows), "allow_list": None}
    names = _allow_names(a.allow_list)
    if names:
        held = packing.read_held_out_texts(Path(a.data))
        files, report["allow_list"] = read_installed(names, held,
                                                     total_chars=int(a.allow_mchars * 1e6))
        if files:
            extra = build_training_rows(files, tok, seq, a.seed, packing.FIM_RATE,
                                        packing.REPO_RATE).astype(np.uint16)
            report["allow_list"]["rows"] = len(extra)
            rows = np.concatenate([rows, extra])
    return rows, report


def _allow_names(spec: str) -> tuple[str, ...]:
    if spec in ("", "none"):
        return ()
    return DEVICE_ALLOW_LIST if spec == "default" else tuple(s for s in spec.split(",") if s)


def held_out_losses(model, held, device, seq: int, batch: int) -> dict[str, float]:
    """Each evaluation set's mean next-token loss (float32, no autocast)."""
    return {k: _eval_loss(model, held[k][:, :seq + 1], device, batch) for k in held.files}


class Curve:
    """The loss curve: a row every LOG_EVERY steps, printed too."""

    def __init__(self):
        self.rows: list[dict] = []

    def add(self, step: int, tokens: int, seconds: float, lr: float, loss: float) -> None:
        self.rows.append({"step": step, "tokens": tokens, "elapsed_s": round(seconds, 2),
                          "lr": lr, "loss": round(loss, 5)})
        rate = tokens / max(seconds, 1e-9)
        print(f"step {step} | loss {loss:.4f} | lr {lr:.3g} | {tokens / 1e6:.1f} M tokens | "
              f"{rate:,.0f} tok/s | {seconds / 60:.2f} min", flush=True)

    def write(self, out: Path) -> None:
        with (out / "loss_curve.csv").open("w", newline="") as f:
            w = csv.DictWriter(f, ["step", "tokens", "elapsed_s", "lr", "loss"])
            w.writeheader()
            w.writerows(self.rows)
        try:
            # optional on the device (the csv is the curve then); Agg before pyplot loads
            import matplotlib  # lazy: matplotlib.pyplot is slow to import
            matplotlib.use("Agg")
            import matplotlib.pyplot as plt  # lazy: after the backend, as above
        except ImportError:
            return
        fig, ax = plt.subplots(figsize=(7, 4))
        ax.plot([r["tokens"] / 1e6 for r in self.rows], [r["loss"] for r in self.rows])
        ax.set_xlabel("tokens (M)")
        ax.set_ylabel("training loss (nats/token)")
        ax.grid(alpha=0.3)
        fig.tight_layout()
        fig.savefig(out / "loss_curve.png", dpi=100)
        plt.close(fig)


def train_seconds(a, elapsed: float) -> float:
    """``--minutes``, capped by what ``--total-minutes`` leaves after ``elapsed`` and a reserve."""
    budget = a.minutes * 60
    if a.total_minutes:
        budget = min(budget, a.total_minutes * 60 - elapsed - a.reserve)
    if budget <= 0:
        raise ValueError(f"--total-minutes {a.total_minutes}: no time is left to train after "
                         f"{elapsed:.0f} s of data and evaluation and a {a.reserve:.0f} s reserve")
    return budget


def train_loop(model, rows: np.ndarray, a, device) -> tuple[dict, Curve]:
    """Steps on reshuffled rows until ``a.train_seconds`` pass; returns the counts and curve."""
    opt = adamw(model, a.lr, TrainOptions.weight_decay)       # the recipe's
    step_model = torch.compile(model) if a.compile else model
    amp = torch.autocast(device.type, dtype=torch.bfloat16, enabled=a.bf16)
    rng = np.random.default_rng(a.seed)
    order, cursor, epochs = rng.permutation(len(rows)), 0, 1
    budget, curve, tokens, step = a.train_seconds, Curve(), 0, 0
    window = torch.zeros((), device=device)
    t0 = time.time()
    model.train()
    while (elapsed := time.time() - t0) < budget:
        if cursor + a.batch > len(order):
            order, cursor, epochs = rng.permutation(len(rows)), 0, epochs + 1
        x = torch.from_numpy(rows[order[cursor:cursor + a.batch]].astype(np.int64))
        x = x.to(device, non_blocking=True)                      # [batch, seq + 1]
        cursor += a.batch
        lr = wsd_lr(a.lr, step, elapsed / budget, a.decay)
        loss = optimizer_step(model, step_model, opt, x, lr, amp)
        window += loss.detach()
        step, tokens = step + 1, tokens + x[:, 1:].numel()
        if step % LOG_EVERY == 0:        # the one sync with the device every LOG_EVERY steps
            curve.add(step, tokens, time.time() - t0, lr, window.item() / LOG_EVERY)
            window.zero_()
    seconds = time.time() - t0
    if step % LOG_EVERY:                  # the last steps, fewer than LOG_EVERY
        curve.add(step, tokens, seconds, lr, window.item() / (step % LOG_EVERY))
    return {"steps": step, "tokens": tokens, "epochs": epochs, "train_seconds": round(seconds, 1),
            "tokens_per_s": round(tokens / seconds)}, curve


def export(model, tok: Tokenizer, summary: dict, out: Path) -> list[str]:
    """The model folder (bundled layout) as tar parts in ``out``; their names."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "model"
        model.to("cpu", torch.float16).save_pretrained(folder, safe_serialization=True,
                                                       max_shard_size="12MB")
        save_tokenizer(tok, folder, model.config.max_position_embeddings)
        (folder / "inkling.json").write_text(json.dumps(
            {"fim_family": "inkling", "fim_order": "spm", "trained_context": summary["seq"]},
            indent=2) + "\n")
        (folder / "train_summary.json").write_text(json.dumps(summary, indent=2) + "\n")
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            tar.add(folder, arcname="model")
    data = buf.getvalue()
    names = []
    for i in range(math.ceil(len(data) / PART_BYTES)):
        names.append(f"model.tar.{i:02d}")
        (out / names[-1]).write_bytes(data[i * PART_BYTES:(i + 1) * PART_BYTES])
    return names


def run(a) -> dict:
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    device = device_for(a.device)
    t_start = time.time()
    tok = tokenizer_for(a)
    manifest = json.loads((Path(a.data) / packing.MANIFEST).read_text())
    seq = a.seq or manifest["seq_len"]
    model = load_model(a, tok.get_vocab_size()).to(device, torch.float32)
    check_fits(model)
    rows, data = training_rows(a, tok, seq)
    held = np.load(Path(a.data) / packing.HELD_FILE)
    print(f"gpu_run: {sum(p.numel() for p in model.parameters()) / 1e6:.2f} M parameters on "
          f"{device}, {len(rows)} rows of {seq} tokens, batch {a.batch}, peak lr {a.lr:g}, "
          f"{a.minutes} min (data ready in {time.time() - t_start:.0f} s)", flush=True)
    start = held_out_losses(model, held, device, seq, a.eval_batch)
    print(f"start: {json.dumps({k: round(v, 4) for k, v in start.items()})}", flush=True)
    a.train_seconds = train_seconds(a, time.time() - t_start)
    counts, curve = train_loop(model, rows, a, device)
    end = held_out_losses(model, held, device, seq, a.eval_batch)
    print(f"end: {json.dumps({k: round(v, 4) for k, v in end.items()})}", flush=True)
    summary = {"device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
               "torch": torch.__version__, "parameters": sum(p.numel() for p in model.parameters()),
               "init": a.init or f"scratch ({a.shape or 'bundled'})", "seq": seq, "batch": a.batch,
               "lr": a.lr, "decay": a.decay, "bf16": a.bf16, "compile": a.compile,
               "minutes": a.minutes, "total_minutes": a.total_minutes, **counts, "held_out_start": start, "held_out_end": end,
               "data": {**data, "packed_manifest": {k: manifest[k] for k in (
                   "rows", "tokens", "packages", "train_files", "held_out_pins")}}}
    curve.write(out)
    summary["model_parts"] = export(model, tok, summary, out)
    summary["wall_seconds"] = round(time.time() - t_start, 1)
    (out / "result.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(f"done: {counts['tokens'] / 1e6:.1f} M tokens at {counts['tokens_per_s']:,} tok/s; "
          f"{summary['wall_seconds']:.0f} s in all -> {out}", flush=True)
    return summary


def parse(argv: list[str] | None = None):
    ap = argparse.ArgumentParser(prog="python -m inkling.training.gpu_run",
                                 description="Train within a time budget on the packed data.")
    ap.add_argument("--data", default="packed", help="the packed data (python -m inkling.training.packing)")
    ap.add_argument("--out", required=True, help="where the results go (at most 8 files)")
    ap.add_argument("--minutes", type=float, default=9.0, help="training minutes (the clock's)")
    ap.add_argument("--total-minutes", type=float, default=0.0,
                    help="the whole command's minutes at most: training stops early enough "
                         "(0: no limit)")
    ap.add_argument("--reserve", type=float, default=30.0,
                    help="seconds kept for the final evaluation and export (--total-minutes)")
    start = ap.add_mutually_exclusive_group(required=True)
    start.add_argument("--init", default="", help="a model folder to go on from")
    start.add_argument("--scratch", action="store_true", help="new weights of --shape")
    ap.add_argument("--shape", default="", help=f"with --scratch: {', '.join(SHAPES)}")
    ap.add_argument("--device", default="auto", help="auto (CUDA where there is one), cuda, cpu")
    ap.add_argument("--batch", type=int, default=0, help="rows a step (default 64 on CUDA, 2 else)")
    ap.add_argument("--seq", type=int, default=0, help="tokens a row (default: the packed rows')")
    ap.add_argument("--lr", type=float, default=0.0,
                    help="peak learning rate (default 3e-4 from --init, 1.5e-3 from scratch)")
    ap.add_argument("--decay", type=float, default=0.2, help="the share of the minutes that decays")
    ap.add_argument("--allow-list", default="none",
                    help="installed packages to train on too: none, default, or NAME,NAME")
    ap.add_argument("--allow-mchars", type=float, default=40.0,
                    help="millions of characters of the allow-list's packages at most "
                         "(their tokenizing counts against --total-minutes)")
    ap.add_argument("--compile", action="store_true", help="torch.compile the model")
    ap.add_argument("--no-bf16", dest="bf16", action="store_false", help="float32 training")
    ap.add_argument("--eval-batch", type=int, default=16)
    ap.add_argument("--seed", type=int, default=1234)
    a = ap.parse_args(argv)
    cuda = a.device == "cuda" or (a.device == "auto" and torch.cuda.is_available())
    a.batch = a.batch or (64 if cuda else 2)
    a.lr = a.lr or (3e-4 if a.init else 1.5e-3)
    return a


def main(argv: list[str] | None = None) -> int:
    run(parse(argv))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
