"""Options of the training recipe (no heavy imports: the CLI builds flags from it)."""
from __future__ import annotations

from dataclasses import dataclass

# Options a resumed run may change (the rest define the data, the model and the schedule's
# shape, and are taken from the checkpoint).
RESUMABLE = ("steps", "max_minutes", "stop_at", "cooldown", "eval_every", "checkpoint_minutes",
             "log_every", "device", "threads", "compile", "amp", "profile_steps")


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
    steps: int = 2400           # the run's total step budget: the cosine decays over it; a resume may change it
    lr: float = 2e-3
    min_lr_ratio: float = 0.1
    warmup: int = 60
    weight_decay: float = 0.1
    fim_rate: float = 0.5
    repo_rate: float = 0.25     # share of the chunks (of files with neighbours) in repository-level form
    packages: bool = True       # train on the pinned third-party packages too (evaluation/packages.py)
    stdlib_repeat: int = 1      # each standard-library chunk this many times an epoch (its share)
    eval_every: int = 200
    eval_rows: int = 40
    seed: int = 1234
    device: str = "auto"
    threads: int = 0            # torch threads (0: every core)
    compile: bool = False       # torch.compile the model (measure first: see --profile-steps)
    amp: str = "auto"           # auto | bf16 | off: bfloat16 autocast (auto: CUDA, or a CPU with bfloat16 instructions)
    max_minutes: float = 0.0    # stop (checkpointed) after this many training minutes in all (0: no limit)
    stop_at: int = 0            # stop (checkpointed) once this many steps are done (0: at the budget)
    cooldown: int = 0           # on resume: end the budget this many steps from now, decaying from here
    checkpoint_minutes: float = 10.0
    log_every: int = 10
    profile_steps: int = 0      # time this many steps (data, forward, backward, optimizer) and exit
    shard_mb: int = 12
    max_files: int = 0          # 0: the whole corpus (a smaller number for quick checks)
    init_from: str = ""         # continue from this model folder, or a run's checkpoint
    resume: str = ""            # resume exactly from this checkpoint folder (checkpoint.pt)
    ship: str = ""              # copy the best export of this checkpoint folder into the bundled model


HELP = {
    "out": "the run folder: checkpoint.pt, best/, training_log.tsv (keep it out of git)",
    "steps": "the run's step budget: the cosine decays over it; on --resume, a new total "
             "(the rate decays from where it stands to the floor at the new total)",
    "lr": "peak learning rate (after the warm-up)",
    "repo_rate": "share of the chunks (of files with neighbours) written as repository-level "
                 "samples (<|file_sep|>path blocks of the same package before the file)",
    "packages": "train on the pinned third-party packages too (true/false; evaluation/packages.py)",
    "stdlib_repeat": "each standard-library chunk this many times an epoch, as samples of "
                     "their own (keeps the held-out standard library's share of the data "
                     "when packages are added)",
    "threads": "torch threads: N, 0 for every core, -1 to pick 1 or every core by measuring",
    "compile": "torch.compile the model (true/false; measure first with --profile-steps)",
    "amp": "bfloat16 autocast of the forward: auto (on CUDA, and on a CPU with native "
           "bfloat16 arithmetic such as AVX512_BF16 or AMX), bf16 (asked: an error where the "
           "device has none), off (float32)",
    "max_minutes": "stop, checkpointed, after this many training minutes in all (0: no limit)",
    "stop_at": "stop, checkpointed, once this many steps are done (the schedule is unchanged)",
    "cooldown": "end the budget this many steps from now, decaying from the current rate",
    "checkpoint_minutes": "write checkpoint.pt every this many minutes (and at every stop)",
    "log_every": "print a progress line every this many steps",
    "profile_steps": "time this many steps (data, forward, backward, optimizer), print, exit",
    "max_files": "use only the first N files of each source (quick checks; 0: all)",
    "init_from": "continue from this model folder (its tokenizer and weights), or from a "
                 "run's folder, stopped or finished (its checkpoint's weights and AdamW "
                 "moments): a new run",
    "resume": "resume the run in this folder exactly (checkpoint.pt); the run's options come "
              "from the checkpoint, and only the budget, stopping, evaluation, logging and "
              "thread options may be given again",
    "ship": "copy the best export of this run folder (DIR/best) into the bundled model folder "
            "and rewrite its card; then run `inkling evaluate --write-card` and `inkling "
            "datastore model --from corpus --items 32768 --seed 0`",
}
