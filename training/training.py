"""`inkling train`: the recipe that reproduces the bundled model, resumable exactly.

Corpus (the standard library and pinned third-party packages) -> byte-level BPE
tokenizer (or the tokenizer of the model continued from) -> rows with fill-in-the-middle
and repository-level samples -> a small Llama (RoPE, grouped-query attention, tied
embeddings) trained with AdamW and a warm-up + cosine schedule over a step budget.

The output folder (``--out``, default ``runs/inkling-tiny``, kept out of git) holds:

- ``checkpoint.pt``: everything an exact resume needs (float32 weights, AdamW state,
  the data position: epoch and row cursor, the schedule, the step and token counts,
  torch/numpy/python RNG states), written atomically (temporary file, then rename)
  every ``--checkpoint-minutes``, at a stop (SIGTERM or SIGINT finish the current step,
  save and exit 0; ``--stop-at``, ``--max-minutes``) and at the end of the budget;
- ``best/``: the export (float16 safetensors shards, config, tokenizer, summary, log and
  curve) of the weights with the lowest validation score so far (:func:`_score`: the mean
  of the held-out stdlib and held-out package losses), rewritten at each evaluation that
  improves on it (and on the weights the run started from);
- ``training_log.tsv``: the loss log of every run that led here (a continued model's log
  is carried over), ``loss_curve.png``;
- at the end of the budget, the final export itself (as the recipe always wrote).

``inkling train --resume DIR`` continues exactly; ``--init-from DIR`` starts a new run from
a model folder's weights, or from a run's checkpoint, stopped or finished (weights and
AdamW moments: how a run goes on when its data changes, since a resume refuses changed
data, or after its anneal);
``--ship DIR`` copies ``DIR/best`` into the bundled model folder and rewrites its card.
"""
from __future__ import annotations

import contextlib
import copy
import hashlib
import json
import os
import random
import shutil
import signal
import time
from dataclasses import asdict, fields
from pathlib import Path

import numpy as np
import torch
from tokenizers import Tokenizer
from transformers import LlamaConfig, LlamaForCausalLM
from transformers.utils import logging as hf_logging

from inkling.models.corpus import load_corpus
from inkling.training.samples import build_rows, build_training_rows
from inkling.training.schedule import Schedule
from inkling.training.tokenizer_recipe import save_tokenizer, train_tokenizer
from inkling.training.train_options import RESUMABLE, TrainOptions

CHECKPOINT = "checkpoint.pt"
LOG_HEADER = ("run", "step", "tokens", "tokens_total", "loss", "lr", "val_loss", "val_loss_pkg",
              "elapsed_s")
EXPORT_FILES = ("config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json",
                "inkling.json", "train_summary.json", "training_log.tsv", "loss_curve.png",
                "model.safetensors.index.json")
PER_INVOCATION = ("stop_at", "cooldown", "profile_steps")


def _device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


def _model_config(o: TrainOptions):
    return LlamaConfig(
        vocab_size=o.vocab_size, hidden_size=o.hidden_size, intermediate_size=o.intermediate_size,
        num_hidden_layers=o.layers, num_attention_heads=o.heads, num_key_value_heads=o.kv_heads,
        max_position_embeddings=o.max_positions, rope_theta=10000.0, tie_word_embeddings=True,
        bos_token_id=None, eos_token_id=0, pad_token_id=0, attn_implementation="sdpa")


def native_bf16(device: torch.device) -> bool:
    """Whether ``device`` computes in bfloat16 natively: CUDA, or a CPU with bfloat16
    instructions (AVX512_BF16 or AMX; where it has none, oneDNN emulates them, slower
    than float32)."""
    if device.type == "cuda":
        return torch.cuda.is_bf16_supported()
    if device.type != "cpu":
        return False
    try:
        flags = Path("/proc/cpuinfo").read_text().split()
    except OSError:
        return False
    return "avx512_bf16" in flags or "amx_bf16" in flags


def autocast_for(amp: str, device: torch.device):
    """The training forward's autocast: bfloat16 where ``amp`` asks for it ('bf16': an
    error where the device has no native bfloat16) or allows it ('auto': where
    ``native_bf16``), else none ('off', float32)."""
    if amp not in ("auto", "bf16", "off"):
        raise ValueError(f"--amp must be auto, bf16 or off, got {amp!r}")
    native = native_bf16(device)
    if amp == "bf16" and not native:
        raise ValueError(f"--amp bf16: {device} has no native bfloat16 arithmetic (a CPU "
                         "needs AVX512_BF16 or AMX); use --amp off or auto")
    if amp == "off" or not native:
        return contextlib.nullcontext()
    return torch.autocast(device.type, dtype=torch.bfloat16)


def amp_name(amp) -> str:
    return "bf16" if isinstance(amp, torch.autocast) else "off"


@torch.no_grad()
def _eval_loss(model, rows: np.ndarray, device, batch: int) -> float | None:
    if rows is None or not len(rows):
        return None
    was_training = model.training
    model.eval()
    losses = []
    for i in range(0, len(rows), batch):
        x = torch.from_numpy(rows[i:i + batch].astype(np.int64)).to(device)
        losses.append(_loss(model, x).item())
    model.train(was_training)
    return float(np.mean(losses))


def _loss(model, x: torch.Tensor) -> torch.Tensor:
    # x: [batch, seq + 1]; next-token cross entropy over every position
    logits = model(input_ids=x[:, :-1]).logits            # [batch, seq, vocab]
    return torch.nn.functional.cross_entropy(logits.flatten(0, 1).float(), x[:, 1:].flatten())


def optimizer_step(model, step_model, opt, x: torch.Tensor, lr: float, amp) -> torch.Tensor:
    """One step of the recipe on batch ``x`` ([batch, seq + 1]) at learning rate ``lr``:
    the loss under ``amp``, gradients clipped to norm 1, the update; the loss, undetached
    from the device (no sync). ``step_model`` is ``model`` or its compiled form."""
    for g in opt.param_groups:
        g["lr"] = lr
    with amp:
        loss = _loss(step_model, x)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    opt.zero_grad(set_to_none=True)
    return loss


# ---------------------------------------------------------------------------- logs

def _read_log(path: Path) -> list[dict]:
    if not path.is_file():
        return []
    lines = path.read_text().splitlines()
    if not lines:
        return []
    head = lines[0].split("\t")
    rows = []
    for line in lines[1:]:
        vals = line.split("\t")
        row = {}
        for k, v in zip(head, vals):
            row[k] = None if v == "" else float(v) if k in ("loss", "lr", "val_loss",
                                                           "val_loss_pkg", "elapsed_s") else int(v)
        rows.append(row)
    return rows


def _prior_log(folder: Path, prior: dict) -> list[dict]:
    """The log of the model continued from, in the cumulative form (a one-run log of the
    older recipe gets its run number and cumulative token count)."""
    rows = _read_log(folder / "training_log.tsv")
    if rows and "run" not in rows[0]:
        run = max(1, len(prior.get("runs", [])))
        offset = prior.get("tokens_total", 0) - prior.get("tokens_seen", 0)
        rows = [{"run": run, "step": r["step"], "tokens": r["tokens"],
                 "tokens_total": r["tokens"] + offset, "loss": r["loss"], "lr": r["lr"],
                 "val_loss": r.get("val_loss"), "val_loss_pkg": None,
                 "elapsed_s": r.get("elapsed_s")} for r in rows]
    return rows


def _fill_missing_runs(log_rows: list[dict], runs: list[dict]) -> list[dict]:
    """An end-of-run row (tokens and validation loss) for each earlier run whose steps the
    log does not hold (the first run of the shipped model), so the curve shows every run."""
    have = {r.get("run") for r in log_rows}
    rows, tokens = [], 0
    for i, r in enumerate(runs, 1):
        tokens += r.get("tokens") or 0
        if i not in have and r.get("validation_loss") is not None:
            rows.append({"run": i, "step": r.get("steps"), "tokens": r.get("tokens"),
                         "tokens_total": tokens, "loss": None, "lr": None,
                         "val_loss": r["validation_loss"], "val_loss_pkg": None,
                         "elapsed_s": None})
    return sorted(rows + log_rows, key=lambda r: (r["run"], r["step"] or 0))


def _fmt(v) -> str:
    return "" if v is None else f"{v:.5g}" if isinstance(v, float) else str(v)


def _write_log(path: Path, rows: list[dict]) -> None:
    tmp = path.with_suffix(".tmp")
    with tmp.open("w") as f:
        f.write("\t".join(LOG_HEADER) + "\n")
        for r in rows:
            f.write("\t".join(_fmt(r.get(k)) for k in LOG_HEADER) + "\n")
    os.replace(tmp, path)


def _plot(log_rows: list[dict], path: Path) -> None:
    # here, not at the top: the backend is chosen before pyplot is imported, and only the
    # end of a run plots (matplotlib.pyplot: 0.5 s to import, -X importtime)
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(8, 4.5))
    runs = sorted({r.get("run", 1) for r in log_rows})
    for run in runs:
        rr = [r for r in log_rows if r.get("run", 1) == run and r.get("loss") is not None]
        if not rr:
            continue
        x = [r.get("tokens_total", r.get("tokens")) / 1e6 for r in rr]
        y = np.array([r["loss"] for r in rr])
        line, = ax.plot(x, y, lw=0.5, alpha=0.35)
        k = min(50, len(y))
        smooth = np.convolve(y, np.ones(k) / k, mode="valid")
        ax.plot(x[k - 1:], smooth, lw=1.4, color=line.get_color(),
                label=f"run {run} training loss (mean of {k} steps)")
    val = [(r.get("tokens_total", r.get("tokens")) / 1e6, r["val_loss"]) for r in log_rows
           if r.get("val_loss") is not None]
    if val:
        ax.plot(*zip(*val), "o-", ms=3, color="black", label="validation (held-out stdlib)")
    pkg = [(r["tokens_total"] / 1e6, r["val_loss_pkg"]) for r in log_rows
           if r.get("val_loss_pkg") is not None]
    if pkg:
        ax.plot(*zip(*pkg), "s--", ms=3, color="tab:red", label="held-out package (toolz)")
    ax.set_xlabel("tokens seen, all runs (M)")
    ax.set_ylabel("cross entropy (nats/token)")
    ax.set_title("inkling-tiny training, all runs")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# ---------------------------------------------------------------------------- data

def _prior_run(path: str) -> dict:
    """The summary of the run a continued training starts from (its tokenizer and weights):
    a model folder written by ``inkling train``, or a run's folder (its checkpoint)."""
    folder = Path(path)
    summary = folder / "train_summary.json"
    if _from_checkpoint(path):
        prior = json.loads(summary.read_text()) if summary.is_file() else {}
        step = torch.load(folder / CHECKPOINT, map_location="cpu",
                          weights_only=False)["state"]["step"]
        if prior.get("step") != step:
            raise ValueError(f"--init-from {path}: its train_summary.json (step "
                             f"{prior.get('step')}) is not its checkpoint's (step {step}): stop "
                             "that run first (kill -TERM), which writes both")
        return prior
    for name in ("config.json", "tokenizer.json"):
        if not (folder / name).is_file():
            raise FileNotFoundError(f"--init-from {path}: no {name} there (a folder written by "
                                    "`inkling train` is needed)")
    return json.loads(summary.read_text()) if summary.is_file() else {"tokens_seen": 0, "runs": []}


def _run_kind(init_from: str) -> str:
    """How a new run starts, as its summary records it: ``new`` (from scratch),
    ``continued`` (a model's weights, AdamW moments from zero) or ``carried`` (a run's
    checkpoint, stopped or finished: its weights and AdamW moments)."""
    if not init_from:
        return "new"
    return "carried" if _from_checkpoint(init_from) else "continued"


def _from_checkpoint(path: str) -> bool:
    """Whether ``--init-from`` takes a run's checkpoint: a run folder, stopped or finished
    (a finished run's export holds the checkpoint's weights; its AdamW moments go on too).
    A model folder (an export alone, the bundled model) has none."""
    return (Path(path) / CHECKPOINT).is_file()


def _run_entry(prior: dict) -> dict:
    o = prior.get("options", {})
    return {"steps": prior.get("steps_done"), "tokens": prior.get("tokens_seen"), "lr": o.get("lr"),
            "validation_loss": prior.get("validation_loss"), "device": prior.get("device")}


def _with_rates(runs: list[dict], prior: dict) -> list[dict]:
    """Earlier runs' entries with their tokens/s where the summaries allow (the summary of
    the older recipe kept only its last run's minutes and the minutes of all runs)."""
    runs = [dict(r) for r in runs]
    if runs and prior and runs[-1].get("tokens_per_s") is None and prior.get("minutes"):
        runs[-1]["tokens_per_s"] = round(runs[-1]["tokens"] / (prior["minutes"] * 60))
        rest = prior.get("minutes_total", 0) - prior["minutes"]
        if len(runs) == 2 and runs[0].get("tokens_per_s") is None and rest > 0:
            runs[0]["tokens_per_s"] = round(runs[0]["tokens"] / (rest * 60))
    return runs


class Data:
    """The training files and the held-out sets; rows of an epoch are built on demand,
    deterministically from (files, tokenizer, seed + epoch)."""

    def __init__(self, o: TrainOptions, tok: Tokenizer):
        from inkling.evaluation.packages import PACKAGES, HELD_OUT_PACKAGE, assert_not_held_out
        if o.stdlib_repeat < 1:
            raise ValueError(f"--stdlib-repeat must be at least 1, got {o.stdlib_repeat}")
        corpus = load_corpus()
        stdlib = corpus.train[:o.max_files] if o.max_files else corpus.train
        files = list(stdlib)
        self.packages = []
        pkg_held = []
        self.copies_dropped: list[str] = []
        if o.packages:
            from inkling.evaluation.packages import (drop_held_out_copies, load_held_out_files,
                                   load_held_out_package, load_package_files)
            pkg_files = load_package_files()
            if o.max_files:
                pkg_files = pkg_files[:o.max_files]
            pkg_held = load_held_out_package()      # its rows: the package validation loss
            pkg_files, self.copies_dropped = drop_held_out_copies(
                pkg_files, corpus.held_out + load_held_out_files())    # both sets' packages
            files += pkg_files
            self.packages = [f"{n}=={v}" for n, v in PACKAGES]
        assert_not_held_out(files)
        self.files, self.o, self.tok = files, o, tok
        self.stdlib_files, self.held_out = len(stdlib), corpus.held_out
        self.held_out_package = f"{HELD_OUT_PACKAGE[0]}=={HELD_OUT_PACKAGE[1]}" if pkg_held else ""
        # the stdlib validation rows are made exactly as the earlier recipe made them
        self.val_rows = build_rows([f.text for f in corpus.held_out], tok, o.seq_len,
                                   o.seed + 999, o.fim_rate)[:o.eval_rows]
        self.val_rows_pkg = (build_training_rows(pkg_held, tok, o.seq_len, o.seed + 999,
                                                 o.fim_rate, o.repo_rate)[:o.eval_rows]
                             if pkg_held else None)
        h = hashlib.sha256()
        for f in files:
            h.update(f"{f.package}\0{f.relpath}\0{len(f.text)}\0".encode())
            h.update(hashlib.sha256(f.text.encode()).digest())
        h.update(hashlib.sha256(tok.to_str().encode()).digest())
        h.update(f"{o.seq_len} {o.fim_rate} {o.repo_rate}".encode())
        if o.stdlib_repeat != 1:            # the data of earlier runs keeps its fingerprint
            h.update(f" stdlib x{o.stdlib_repeat}".encode())
        self.fingerprint = h.hexdigest()[:16]
        self.chars = sum(len(f.text) for f in files)
        self._epoch, self._rows = None, None
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


# ---------------------------------------------------------------------------- state

def _rng_state() -> dict:
    return {"torch": torch.get_rng_state(), "numpy": np.random.get_state(),
            "python": random.getstate()}


def _set_rng_state(s: dict) -> None:
    torch.set_rng_state(s["torch"])
    np.random.set_state(s["numpy"])
    random.setstate(s["python"])


def _atomic_save(obj, path: Path) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("wb") as f:
        torch.save(obj, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def _score(val: float, val_pkg: float | None) -> float:
    """What ``best/`` keeps the lowest of: the mean of the held-out stdlib loss and the
    held-out package's (the stdlib loss alone where there is no held-out package). The
    package counts as much as the stdlib: it is the third-party code users write, and a
    run that only watched the stdlib kept weights 0.44 nats worse on it."""
    return val if val_pkg is None else (val + val_pkg) / 2


def _export(model, tok: Tokenizer, o: TrainOptions, summary: dict, log_rows: list[dict],
            dest: Path) -> None:
    """A model folder (float16 shards, config, tokenizer, summary, log, curve) written
    beside ``dest`` and renamed into place."""
    tmp = dest.with_name(dest.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    half = copy.deepcopy(model).to("cpu", torch.float16)
    half.save_pretrained(tmp, safe_serialization=True, max_shard_size=f"{o.shard_mb}MB")
    del half
    save_tokenizer(tok, tmp, o.max_positions)
    (tmp / "inkling.json").write_text(json.dumps(
        {"fim_family": "inkling", "fim_order": "spm", "trained_context": o.seq_len}, indent=2) + "\n")
    (tmp / "train_summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    _write_log(tmp / "training_log.tsv", log_rows)
    _plot(log_rows, tmp / "loss_curve.png")
    if dest.resolve() == Path(o.out).resolve():     # the final export goes into the run folder
        for p in list(dest.glob("*.safetensors")) + [dest / "model.safetensors.index.json"]:
            p.unlink(missing_ok=True)
        for p in tmp.iterdir():
            os.replace(p, dest / p.name)
        tmp.rmdir()
        return
    old = dest.with_name(dest.name + ".old")
    shutil.rmtree(old, ignore_errors=True)
    if dest.exists():
        os.replace(dest, old)
    os.replace(tmp, dest)
    shutil.rmtree(old, ignore_errors=True)


class _Threads:
    """torch's thread count: fixed (``--threads N``, 0 for every core), or ``--threads -1``:
    every 100 steps, 10 steps run with the other count (1 or every core) and the faster
    one is kept. On a CPU shared with other work one thread often beats two (two wait on
    each other when either is preempted); on an idle one two win. On this model the count
    does not change the arithmetic (the forward and backward agree bit for bit)."""

    PROBE_EVERY, PROBE_STEPS = 100, 10

    def __init__(self, threads: int, cores: int):
        self.auto = threads < 0 and cores > 1
        self.options = (1, cores)
        self.current = 1 if self.auto else (threads or cores)
        self.times: dict[int, list[float]] = {n: [] for n in self.options}
        self.probe_left = 0
        torch.set_num_threads(self.current)

    def step_done(self, step: int, seconds: float) -> None:
        if not self.auto:
            return
        n = torch.get_num_threads()
        self.times.setdefault(n, []).append(seconds)
        self.times[n] = self.times[n][-self.PROBE_STEPS:]
        if self.probe_left:
            self.probe_left -= 1
            if not self.probe_left:
                other = n
                mean = {k: float(np.mean(v)) for k, v in self.times.items() if v}
                if mean.get(other, 1e9) < mean.get(self.current, 1e9):
                    self.current = other
                torch.set_num_threads(self.current)
                print(f"threads: {self.current} (step {mean.get(1, 0):.2f} s with 1, "
                      f"{mean.get(self.options[1], 0):.2f} s with {self.options[1]})", flush=True)
        elif step % self.PROBE_EVERY == 0 and len(self.times[self.current]) >= self.PROBE_STEPS:
            other = self.options[1] if self.current == 1 else 1
            self.times[other] = []
            self.probe_left = self.PROBE_STEPS
            torch.set_num_threads(other)


class _Stop:
    """SIGTERM/SIGINT: the running step finishes, then the state is saved and train returns."""

    def __init__(self):
        self.signal = None
        self._old = {}

    def __enter__(self):
        with contextlib.suppress(ValueError):       # not the main thread: no handlers
            for sig in (signal.SIGTERM, signal.SIGINT):
                self._old[sig] = signal.signal(sig, self._handle)
        return self

    def _handle(self, signum, frame):
        if self.signal is not None and signum == signal.SIGINT:
            raise KeyboardInterrupt          # a second Ctrl-C stops at once
        self.signal = signum
        print(f"\nsignal {signal.Signals(signum).name}: finishing this step, then saving",
              flush=True)

    def __exit__(self, *exc):
        for sig, old in self._old.items():
            signal.signal(sig, old)


def _options_for_resume(saved: dict, given: dict) -> TrainOptions:
    saved = {"stdlib_repeat": 1, **saved}   # a run from before the option read stdlib once
    o = TrainOptions(**{k: v for k, v in saved.items() if k in {f.name for f in fields(TrainOptions)}})
    for k in PER_INVOCATION:           # these say what one invocation does, not the run
        setattr(o, k, getattr(TrainOptions, k))
    for k, v in given.items():
        if k in ("resume", "out"):
            continue
        if k in RESUMABLE:
            setattr(o, k, v)
        elif getattr(o, k) != v:
            raise ValueError(f"--{k.replace('_', '-')} cannot change on resume (the checkpoint "
                             f"has {getattr(o, k)!r}); only {', '.join(RESUMABLE)} can")
    return o


# ---------------------------------------------------------------------------- train

def train(o: TrainOptions, given: dict | None = None) -> dict:
    """Run (or resume) the recipe; returns the summary (also written to train_summary.json).

    ``given``: the options named on the command line (a resume takes the others from the
    checkpoint); without it, every option of ``o`` that differs from the default.
    """
    if o.ship:
        from inkling.training.ship import ship
        return ship(o.ship)
    if given is None:
        default = TrainOptions()
        given = {f.name: getattr(o, f.name) for f in fields(TrainOptions)
                 if getattr(o, f.name) != getattr(default, f.name)}
    t_invoked = time.time()
    ckpt = None
    if o.resume:
        path = Path(o.resume) / CHECKPOINT
        if not path.is_file():
            raise FileNotFoundError(f"--resume {o.resume}: no {CHECKPOINT} there")
        ckpt = torch.load(path, map_location="cpu", weights_only=False)
        o = _options_for_resume(ckpt["options"], given)
        o.out = o.resume = str(Path(given["resume"]))
    prior = ckpt["prior"] if ckpt else (_prior_run(o.init_from) if o.init_from else {})
    out = Path(o.out)
    out.mkdir(parents=True, exist_ok=True)
    device = _device(o.device)
    cores = os.cpu_count() or 1
    threads = _Threads(o.threads, cores) if device.type == "cpu" else None

    if ckpt:
        tok = Tokenizer.from_str(ckpt["tokenizer"])
    elif o.init_from and _from_checkpoint(o.init_from):
        init_ckpt = torch.load(Path(o.init_from) / CHECKPOINT, map_location="cpu",
                               weights_only=False)
        tok = Tokenizer.from_str(init_ckpt["tokenizer"])
    elif o.init_from:
        tok = Tokenizer.from_file(str(Path(o.init_from) / "tokenizer.json"))
    else:
        tok = None
    if tok is None:
        from inkling.models.corpus import load_corpus as _lc
        c = _lc()
        texts = [f.text for f in (c.train[:o.max_files] if o.max_files else c.train)]
        tok = train_tokenizer(texts, o.vocab_size)
    if not ckpt:
        torch.manual_seed(o.seed)
    data = Data(o, tok)

    hf_logging.disable_progress_bar()
    if ckpt:
        model = LlamaForCausalLM(LlamaConfig.from_dict(ckpt["config"]))
        model.load_state_dict(ckpt["model"])
    elif o.init_from and _from_checkpoint(o.init_from):
        model = LlamaForCausalLM(LlamaConfig.from_dict(init_ckpt["config"]))
        model.load_state_dict(init_ckpt["model"])
        moments = init_ckpt["optimizer"]       # AdamW's moments go on with the weights
        del init_ckpt
    elif o.init_from:
        model = LlamaForCausalLM.from_pretrained(o.init_from, dtype=torch.float32)
    else:
        model = LlamaForCausalLM(_model_config(o))
    model = model.to(device, torch.float32)
    model.train()
    n_params = sum(p.numel() for p in model.parameters())
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": o.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=o.lr, betas=(0.9, 0.95), fused=True)
    if not ckpt and o.init_from and _from_checkpoint(o.init_from):
        opt.load_state_dict(moments)           # a fresh start of them throws the loss back up
        del moments
    step_model = torch.compile(model) if o.compile else model
    amp = autocast_for(o.amp, device)

    if ckpt:
        opt.load_state_dict(ckpt["optimizer"])
        st = ckpt["state"]
        st["stopped"] = None                   # why the last invocation stopped, not this one
        if st["fingerprint"] != data.fingerprint:
            raise ValueError(f"--resume {o.resume}: the training data changed (fingerprint "
                             f"{data.fingerprint}, the checkpoint's {st['fingerprint']}): the "
                             "wheel cache, the standard library or the recipe differ")
        sched = Schedule.from_state(ckpt["schedule"])
        log_rows = [r for r in _read_log(out / "training_log.tsv")
                    if not (r["run"] == st["run"] and r["step"] > st["step"])]
        log_rows = _fill_missing_runs(log_rows, st["runs"])
        _set_rng_state(ckpt["rng"])
        if "best_score" not in st:          # a checkpoint from before the score: its best row's
            row = next((r for r in log_rows if r["run"] == st["run"]
                        and r["step"] == st["best_step"] and r.get("val_loss") is not None), None)
            st["best_score"] = _score(row["val_loss"], row.get("val_loss_pkg")) if row else None
    else:
        first_epoch, cursor = prior.get("epochs_total", prior.get("epochs_started", 0)), 0
        pos = prior.get("data_position") or {}
        if pos.get("fingerprint") == data.fingerprint:    # same data: go on where it stood
            first_epoch, cursor = pos["epoch"], pos["cursor"]
        runs = prior.get("runs", [_run_entry(prior)] if prior else [])
        st = {"run": len(runs) + 1, "step": 0, "tokens": 0, "epoch": first_epoch,
              "first_epoch": first_epoch, "cursor": cursor, "fingerprint": data.fingerprint,
              "train_seconds": 0.0, "best_val": None, "best_step": None, "best_score": None,
              "prior_tokens": prior.get("tokens_total", prior.get("tokens_seen", 0)),
              "prior_minutes": prior.get("minutes_total", prior.get("minutes", 0)),
              "runs": runs, "start_val": None, "last_val": None, "last_val_pkg": None,
              "stopped": None, "kind": _run_kind(o.init_from)}
        sched = Schedule.new(o.lr, o.min_lr_ratio, o.warmup, o.steps)
        log_rows = _prior_log(Path(o.init_from), prior) if o.init_from else []
        log_rows = _fill_missing_runs(log_rows, runs)
    if o.cooldown:
        sched.set_total(st["step"], st["step"] + o.cooldown)
    elif sched.total != o.steps:
        sched.set_total(st["step"], o.steps)
    o.steps = sched.total

    kind = "resuming" if ckpt else ("continuing from " + o.init_from if o.init_from else "new run")
    print(f"{kind}: run {st['run']}, step {st['step']} of {sched.total}, model "
          f"{n_params / 1e6:.2f} M parameters on {device} ({torch.get_num_threads()} threads, "
          f"autocast {amp_name(amp)}), batch {o.batch_size} x {o.seq_len}, "
          f"peak lr {sched.peak:g}, floor {sched.floor:g}, "
          f"warm-up {sched.warmup}; data epoch {st['epoch']} row {st['cursor']}; "
          f"{st['prior_tokens'] / 1e6:.2f} M tokens before this run", flush=True)
    if o.init_from and not ckpt:
        print("continuing from a run's checkpoint, its weights and AdamW moments: a new run "
              "(a new warm-up and decay)" if _from_checkpoint(o.init_from) else
              "continuing from a model's weights: a new run (AdamW moments start at zero, "
              "a new warm-up and decay)", flush=True)

    def summary() -> dict:
        last_val = st["last_val"]
        return {
            "options": asdict(o), "parameters": n_params, "tokens_seen": st["tokens"],
            "epochs_started": st["epoch"] - st["first_epoch"] + 1, "steps_done": st["step"],
            "tokens_total": st["prior_tokens"] + st["tokens"], "epochs_total": st["epoch"] + 1,
            "minutes_total": round(st["prior_minutes"] + st["train_seconds"] / 60, 1),
            "runs": _with_rates(st["runs"], prior) + [{"steps": st["step"], "tokens": st["tokens"], "lr": sched.peak,
                                   "validation_loss": last_val,
                                   "validation_loss_package": st["last_val_pkg"],
                                   "device": str(device), "kind": st["kind"],
                                   "tokens_per_s": round(st["tokens"] / st["train_seconds"])
                                   if st["train_seconds"] else None,
                                   "start_validation_loss": st["start_val"],
                                   "best_validation_loss": st["best_val"],
                                   "best_step": st["best_step"]}],
            "stopped_early": st["step"] < sched.total, "stopped_by": st["stopped"],
            "final_train_loss": next((r["loss"] for r in reversed(log_rows)
                                      if r.get("loss") is not None), None),
            "validation_loss": last_val, "validation_loss_package": st["last_val_pkg"],
            "minutes": round(st["train_seconds"] / 60, 1), "device": str(device),
            "train_files": len(data.files), "stdlib_train_files": data.stdlib_files,
            "train_chars": data.chars, "packages": data.packages,
            "held_out_package": data.held_out_package,
            "copies_dropped": data.copies_dropped,
            "held_out_files": [f.relpath for f in data.held_out], "torch": torch.__version__,
            # what continuing from these weights needs (`--init-from` starts a new run there)
            "data_position": {"epoch": st["epoch"], "cursor": st["cursor"],
                              "fingerprint": data.fingerprint, "seed": o.seed},
            "schedule": sched.state(), "step": st["step"],
        }

    def checkpoint() -> None:
        _atomic_save({"options": asdict(o), "config": model.config.to_dict(),
                      "tokenizer": tok.to_str(), "model": model.state_dict(),
                      "optimizer": opt.state_dict(), "schedule": sched.state(), "state": st,
                      "rng": _rng_state(), "prior": prior}, out / CHECKPOINT)
        _write_log(out / "training_log.tsv", log_rows)

    def evaluate() -> tuple[float | None, float | None]:
        # in float32 whatever trains: validation losses compare across runs and devices
        return (_eval_loss(model, data.val_rows, device, o.batch_size),
                _eval_loss(model, data.val_rows_pkg, device, o.batch_size))

    if o.profile_steps:
        return _profile(o, model, step_model, opt, data, st, device, amp)

    if not ckpt and o.init_from and o.eval_every:
        v, vp = evaluate()                                  # where this run starts from
        st["start_val"], st["last_val"], st["last_val_pkg"] = v, v, vp
        st["best_val"], st["best_step"] = v, 0   # best/ is written only when it beats the start
        st["best_score"] = _score(v, vp)
        print(f"start: validation loss {v:.4f} (held-out stdlib)"
              + (f", {vp:.4f} (held-out package)" if vp is not None else ""), flush=True)
        log_rows.append({"run": st["run"], "step": 0, "tokens": 0,
                         "tokens_total": st["prior_tokens"], "loss": None, "lr": None,
                         "val_loss": v, "val_loss_pkg": vp, "elapsed_s": 0.0})

    t_seg = time.time()          # training time of this invocation, added to train_seconds
    base_seconds = st["train_seconds"]
    last_ckpt = time.time()
    win_loss, win_tokens, win_t = [], 0, time.time()
    with _Stop() as stop:
        while st["step"] < sched.total:
            if stop.signal is not None:
                st["stopped"] = signal.Signals(stop.signal).name
                break
            if o.stop_at and st["step"] >= o.stop_at:
                st["stopped"] = "stop_at"
                break
            if o.max_minutes and st["train_seconds"] / 60 >= o.max_minutes:
                st["stopped"] = "max_minutes"
                break
            t_step = time.perf_counter()
            rows = data.rows(st["epoch"])
            if st["cursor"] + o.batch_size > len(rows):
                st["epoch"], st["cursor"] = st["epoch"] + 1, 0
                rows = data.rows(st["epoch"])
            x = torch.from_numpy(rows[st["cursor"]:st["cursor"] + o.batch_size].astype(np.int64))
            x = x.to(device)
            lr = sched.lr(st["step"])
            loss = optimizer_step(model, step_model, opt, x, lr, amp)
            st["cursor"] += o.batch_size
            st["step"] += 1
            if threads is not None:
                threads.step_done(st["step"], time.perf_counter() - t_step)
            n_tok = x[:, 1:].numel()
            st["tokens"] += n_tok
            st["train_seconds"] = base_seconds + time.time() - t_seg
            loss_v = loss.item()
            win_loss.append(loss_v)
            win_tokens += n_tok
            val = val_pkg = None
            last = st["step"] >= sched.total
            if o.eval_every and (st["step"] % o.eval_every == 0 or last):
                val, val_pkg = evaluate()
                st["last_val"], st["last_val_pkg"] = val, val_pkg
            log_rows.append({"run": st["run"], "step": st["step"], "tokens": st["tokens"],
                             "tokens_total": st["prior_tokens"] + st["tokens"], "loss": loss_v,
                             "lr": lr, "val_loss": val, "val_loss_pkg": val_pkg,
                             "elapsed_s": round(st["train_seconds"], 1)})
            if o.log_every and (st["step"] % o.log_every == 0 or last or val is not None):
                dt = time.time() - win_t
                print(f"step {st['step']}/{sched.total} | loss {np.mean(win_loss):.4f} | "
                      f"lr {lr:.3g} | {win_tokens / max(dt, 1e-9):.0f} tok/s | tokens "
                      f"{st['tokens'] / 1e6:.2f} M (all runs {(st['prior_tokens'] + st['tokens']) / 1e6:.2f} M) | "
                      f"epoch {st['epoch']} row {st['cursor']}/{len(rows)} | "
                      f"{st['train_seconds'] / 60:.1f} min", flush=True)
                win_loss, win_tokens, win_t = [], 0, time.time()
            if val is not None:
                score = _score(val, val_pkg)
                better = st["best_score"] is None or score < st["best_score"]
                print(f"eval at step {st['step']}: validation loss {val:.4f} (held-out stdlib)"
                      + (f", {val_pkg:.4f} (held-out package), score {score:.4f}"
                         if val_pkg is not None else "")
                      + (" - best so far, exported to best/" if better else
                         f" (best score {st['best_score']:.4f} at step {st['best_step']})"),
                      flush=True)
                if better:
                    st["best_val"], st["best_step"], st["best_score"] = val, st["step"], score
                    _export(model, tok, o, summary(), log_rows, out / "best")
            if time.time() - last_ckpt > o.checkpoint_minutes * 60:
                checkpoint()
                last_ckpt = time.time()
                print(f"checkpoint at step {st['step']} -> {out / CHECKPOINT}", flush=True)
        checkpoint()
    done = st["step"] >= sched.total
    print(("budget done" if done else f"stopped ({st['stopped']})")
          + f" at step {st['step']}: checkpoint {out / CHECKPOINT}"
          + ("" if done else f"; go on with `inkling train --resume {out}`"), flush=True)
    s = summary()
    if done:
        if st["last_val"] is None or log_rows[-1].get("val_loss") is None:
            st["last_val"], st["last_val_pkg"] = evaluate()
            s = summary()
        _export(model, tok, o, s, log_rows, out)
        print(f"done: validation loss {st['last_val']:.3f} after {st['tokens'] / 1e6:.2f} M "
              f"tokens in {s['minutes']} min -> {out}", flush=True)
    else:
        (out / "train_summary.json").write_text(json.dumps(s, indent=2) + "\n")
    _plot(log_rows, out / "loss_curve.png")
    print(f"this invocation: {(time.time() - t_invoked) / 60:.1f} min", flush=True)
    return s


def _profile(o, model, step_model, opt, data, st, device, amp) -> dict:
    """Time ``o.profile_steps`` training steps after two untimed ones (nothing is saved)."""
    rows = data.rows(st["epoch"])
    parts = {"data": [], "forward": [], "backward": [], "optimizer": []}
    for i in range(o.profile_steps + 2):
        t0 = time.perf_counter()
        c = (st["cursor"] + i * o.batch_size) % (len(rows) - o.batch_size)
        x = torch.from_numpy(rows[c:c + o.batch_size].astype(np.int64)).to(device)
        t1 = time.perf_counter()
        with amp:
            loss = _loss(step_model, x)
        t2 = time.perf_counter()
        loss.backward()
        t3 = time.perf_counter()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        t4 = time.perf_counter()
        if i >= 2:
            for k, v in zip(parts, (t1 - t0, t2 - t1, t3 - t2, t4 - t3)):
                parts[k].append(v)
    med = {k: float(np.median(v)) for k, v in parts.items()}
    total = sum(med.values())
    tps = o.batch_size * o.seq_len / total
    print(f"profile: batch {o.batch_size} x {o.seq_len}, {torch.get_num_threads()} threads, "
          f"compile {o.compile}, amp {amp_name(amp)}: {tps:.0f} tokens/s; per step (median of {o.profile_steps}) "
          + ", ".join(f"{k} {1000 * v:.0f} ms ({100 * v / total:.0f}%)" for k, v in med.items()),
          flush=True)
    return {"tokens_per_s": tps, "ms": {k: 1000 * v for k, v in med.items()},
            "batch_size": o.batch_size, "seq_len": o.seq_len, "threads": torch.get_num_threads(),
            "compile": o.compile, "amp": amp_name(amp)}
