"""`inkling train`: the recipe that reproduces the bundled model.

Corpus -> byte-level BPE tokenizer -> rows with fill-in-the-middle samples ->
a small Llama (RoPE, grouped-query attention, tied embeddings) trained with AdamW
and a cosine schedule -> float16 safetensors shards, config, tokenizer, loss log
and loss curve in the output folder.
"""
from __future__ import annotations

import contextlib
import json
import math
import os
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np
import torch
from tokenizers import Tokenizer
from tqdm import tqdm

from .corpus import load_corpus
from .samples import build_rows
from .tokenizer_recipe import save_tokenizer, train_tokenizer
from .train_options import TrainOptions


def _device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


def _model_config(o: TrainOptions):
    from transformers import LlamaConfig
    return LlamaConfig(
        vocab_size=o.vocab_size, hidden_size=o.hidden_size, intermediate_size=o.intermediate_size,
        num_hidden_layers=o.layers, num_attention_heads=o.heads, num_key_value_heads=o.kv_heads,
        max_position_embeddings=o.max_positions, rope_theta=10000.0, tie_word_embeddings=True,
        bos_token_id=None, eos_token_id=0, pad_token_id=0, attn_implementation="sdpa")


def _lr_at(step: int, o: TrainOptions, elapsed_min: float = 0.0) -> float:
    """Warm-up, then cosine decay over the budget: steps or minutes, whichever runs out first."""
    if step < o.warmup:
        return o.lr * (step + 1) / o.warmup
    t = min(1.0, max((step - o.warmup) / max(1, o.steps - o.warmup), elapsed_min / o.max_minutes))
    return o.lr * (o.min_lr_ratio + (1 - o.min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * t)))


@torch.no_grad()
def _eval_loss(model, rows: np.ndarray, device, batch: int) -> float:
    model.eval()
    losses = []
    for i in range(0, len(rows), batch):
        x = torch.from_numpy(rows[i:i + batch].astype(np.int64)).to(device)
        losses.append(_loss(model, x).item())
    model.train()
    return float(np.mean(losses))


def _loss(model, x: torch.Tensor) -> torch.Tensor:
    # x: [batch, seq + 1]; next-token cross entropy over every position
    logits = model(input_ids=x[:, :-1]).logits            # [batch, seq, vocab]
    return torch.nn.functional.cross_entropy(logits.flatten(0, 1).float(), x[:, 1:].flatten())


def _plot(log_rows: list[dict], path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4))
    steps = [r["step"] for r in log_rows]
    ax.plot(steps, [r["loss"] for r in log_rows], label="train loss", lw=1)
    val = [(r["step"], r["val_loss"]) for r in log_rows if r.get("val_loss") is not None]
    if val:
        ax.plot(*zip(*val), "o-", label="validation loss")
    ax.set_xlabel("step")
    ax.set_ylabel("cross entropy (nats/token)")
    ax.set_title("inkling-tiny training")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _prior_run(path: str) -> dict:
    """The summary of the run a continued training starts from (its tokenizer and weights)."""
    folder = Path(path)
    for name in ("config.json", "tokenizer.json"):
        if not (folder / name).is_file():
            raise FileNotFoundError(f"--init-from {path}: no {name} there (a folder written by "
                                    "`inkling train` is needed)")
    summary = folder / "train_summary.json"
    return json.loads(summary.read_text()) if summary.is_file() else {"tokens_seen": 0, "runs": []}


def _run_entry(prior: dict) -> dict:
    o = prior.get("options", {})
    return {"steps": prior.get("steps_done"), "tokens": prior.get("tokens_seen"), "lr": o.get("lr"),
            "validation_loss": prior.get("validation_loss"), "device": prior.get("device")}


def train(o: TrainOptions) -> dict:
    """Run the recipe; returns a summary dict (also written to train_summary.json)."""
    t0 = time.time()
    prior = _prior_run(o.init_from) if o.init_from else {}
    out = Path(o.out)
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(o.seed)
    device = _device(o.device)
    if device.type == "cpu":
        torch.set_num_threads(os.cpu_count() or 1)
    corpus = load_corpus()
    if o.max_files:
        corpus = type(corpus)(corpus.root, corpus.train[:o.max_files], corpus.held_out)
    print(f"corpus: {len(corpus.train)} training files ({corpus.train_chars / 1e6:.1f} M chars), "
          f"{len(corpus.held_out)} held out, from {corpus.root}")
    texts = [f.text for f in corpus.train]
    if prior:
        tok = Tokenizer.from_file(str(Path(o.init_from) / "tokenizer.json"))
        print(f"continuing from {o.init_from}: {prior.get('tokens_total', prior.get('tokens_seen', 0)) / 1e6:.2f} "
              "M tokens seen before; its tokenizer and weights are kept")
    else:
        tok = train_tokenizer(texts, o.vocab_size)
    save_tokenizer(tok, out, o.max_positions)
    val_rows = build_rows([f.text for f in corpus.held_out], tok, o.seq_len, o.seed + 999,
                          o.fim_rate)[:o.eval_rows]
    from transformers import LlamaForCausalLM
    if prior:
        model = LlamaForCausalLM.from_pretrained(o.init_from, dtype=torch.float32).to(device)
    else:
        model = LlamaForCausalLM(_model_config(o)).to(device)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"model: {n_params / 1e6:.2f} M parameters on {device}")
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": o.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=o.lr, betas=(0.9, 0.95), fused=device.type == "cuda")
    amp = (torch.autocast("cuda", dtype=torch.bfloat16) if device.type == "cuda"
           else contextlib.nullcontext())
    log_rows, rows, cursor, tokens = [], None, 0, 0
    epoch = prior.get("epochs_total", prior.get("epochs_started", 0))  # new data orders after a prior run
    first_epoch = epoch
    log_path = out / "training_log.tsv"
    log_file = log_path.open("w")
    log_file.write("step\ttokens\tloss\tlr\tval_loss\telapsed_s\n")
    t_start = time.time()  # the time budget counts training steps only
    bar = tqdm(range(o.steps), desc="training", unit="step", dynamic_ncols=True)
    stopped_early = False
    for step in bar:
        if rows is None or cursor + o.batch_size > len(rows):
            rows = build_rows(texts, tok, o.seq_len, o.seed + epoch, o.fim_rate)
            epoch, cursor = epoch + 1, 0
        x = torch.from_numpy(rows[cursor:cursor + o.batch_size].astype(np.int64)).to(device)
        cursor += o.batch_size
        lr = _lr_at(step, o, (time.time() - t_start) / 60)
        for g in opt.param_groups:
            g["lr"] = lr
        with amp:
            loss = _loss(model, x)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        tokens += x[:, 1:].numel()
        last = step == o.steps - 1
        over_time = (time.time() - t_start) / 60 > o.max_minutes
        val = None
        if (step + 1) % o.eval_every == 0 or last or over_time:
            with amp:
                val = _eval_loss(model, val_rows, device, o.batch_size)
        row = {"step": step + 1, "tokens": tokens, "loss": loss.item(), "lr": lr,
               "val_loss": val, "elapsed_s": round(time.time() - t0, 1)}
        log_rows.append(row)
        log_file.write("\t".join("" if v is None else f"{v:.5g}" if isinstance(v, float) else str(v)
                                 for v in row.values()) + "\n")
        log_file.flush()
        bar.set_postfix(loss=f"{row['loss']:.3f}", val=f"{val:.3f}" if val else "-", epoch=epoch)
        if over_time and not last:
            stopped_early = True
            print(f"\nstopping at step {step + 1}: the {o.max_minutes} minute budget is spent "
                  "(the learning rate has decayed over it)")
            break
    log_file.close()
    _plot(log_rows, out / "loss_curve.png")
    model.to(torch.float16).save_pretrained(out, safe_serialization=True,
                                            max_shard_size=f"{o.shard_mb}MB")
    final_val = next(r["val_loss"] for r in reversed(log_rows) if r["val_loss"] is not None)
    prior_tokens = prior.get("tokens_total", prior.get("tokens_seen", 0))
    summary = {"options": asdict(o), "parameters": n_params, "tokens_seen": tokens,
               "epochs_started": epoch - first_epoch, "steps_done": log_rows[-1]["step"],
               "tokens_total": prior_tokens + tokens, "epochs_total": epoch,
               "minutes_total": round(prior.get("minutes_total", prior.get("minutes", 0))
                                      + (time.time() - t0) / 60, 1),
               "runs": prior.get("runs", [_run_entry(prior)] if prior else []) + [
                   {"steps": log_rows[-1]["step"], "tokens": tokens, "lr": o.lr,
                    "validation_loss": final_val, "device": str(device)}],
               "stopped_early": stopped_early, "final_train_loss": log_rows[-1]["loss"],
               "validation_loss": final_val, "minutes": round((time.time() - t0) / 60, 1),
               "device": str(device), "train_files": len(corpus.train),
               "held_out_files": [f.relpath for f in corpus.held_out],
               "torch": torch.__version__}
    (out / "inkling.json").write_text(json.dumps(
        {"fim_family": "inkling", "fim_order": "spm", "trained_context": o.seq_len}, indent=2) + "\n")
    (out / "train_summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(f"done: validation loss {final_val:.3f} after {tokens / 1e6:.2f} M tokens "
          f"in {summary['minutes']} min -> {out}")
    return summary

