"""Options of the training recipe (no heavy imports: the CLI builds flags from it)."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass
class TrainOptions:
    out: str = "runs/inkling-tiny"
    vocab_size: int = 8192
    hidden_size: int = 256
    layers: int = 6
    heads: int = 8
    kv_heads: int = 2
    intermediate_size: int = 688
    max_positions: int = 2048
    seq_len: int = 1024
    batch_size: int = 4
    steps: int = 2400
    lr: float = 2e-3
    min_lr_ratio: float = 0.1
    warmup: int = 60
    weight_decay: float = 0.1
    fim_rate: float = 0.5
    eval_every: int = 200
    eval_rows: int = 40
    seed: int = 1234
    device: str = "auto"
    max_minutes: float = 78.0
    shard_mb: int = 12
    max_files: int = 0          # 0: the whole corpus (a smaller number for quick checks)
    init_from: str = ""         # continue from this model folder (its tokenizer and weights)
