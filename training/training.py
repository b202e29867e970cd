"""`inkling train`: the recipe that reproduces the bundled model, resumable exactly.

Corpus -> byte-level BPE tokenizer -> fill-in-the-middle and repository rows -> a small Llama
trained with AdamW on a warm-up + cosine schedule. ``--out`` holds ``checkpoint.pt`` (all an exact
resume needs, written atomically), ``best/`` (the export with the lowest :func:`_score`), the loss
log and curve, and at the end of the budget the final export. ``--init-from`` starts a new run from
a model folder or a run's checkpoint, since a resume refuses changed data."""
from __future__ import annotations

import contextlib
import copy
import json
import os
import shutil
import signal
import time
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import numpy as np
import torch
from tokenizers import Tokenizer
from transformers import LlamaConfig, LlamaForCausalLM
from transformers.utils import logging as hf_logging

from inkling.models.corpus import load_corpus
from inkling.training.checkpoint_file import (CHECKPOINT, load_checkpoint, rng_state,
                                              save_checkpoint, set_rng_state)
from inkling.training.data import Data
from inkling.training.schedule import Schedule
from inkling.training.ship import ship
from inkling.training.tokenizer_recipe import save_tokenizer, train_tokenizer
from inkling.training.train_log import fill_missing_runs, plot_log, prior_log, read_log, write_log
from inkling.training.train_options import RESUMABLE, TrainOptions

PER_INVOCATION = ("stop_at", "cooldown", "profile_steps")


def device_for(name: str) -> torch.device:
    """``auto``: CUDA where there is one, else the CPU; else the device named."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


def llama_config(vocab: int, hidden: int, intermediate: int, layers: int, heads: int,
                 kv_heads: int, max_positions: int) -> LlamaConfig:
    """The recipe's Llama of this shape (RoPE, grouped-query attention, tied embeddings)."""
    return LlamaConfig(
        vocab_size=vocab, hidden_size=hidden, intermediate_size=intermediate,
        num_hidden_layers=layers, num_attention_heads=heads, num_key_value_heads=kv_heads,
        max_position_embeddings=max_positions, rope_theta=10000.0, tie_word_embeddings=True,
        bos_token_id=None, eos_token_id=0, pad_token_id=0, attn_implementation="sdpa")


def adamw(model, lr: float, weight_decay: float) -> torch.optim.AdamW:
    """Fused AdamW, weight decay on the matrices only."""
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    return torch.optim.AdamW([{"params": decay, "weight_decay": weight_decay},
                              {"params": no_decay, "weight_decay": 0.0}],
                             lr=lr, betas=(0.9, 0.95), fused=True)


def native_bf16(device: torch.device) -> bool:
    """Whether ``device`` computes bfloat16 natively (CUDA, AVX512_BF16 or AMX); emulated
    bfloat16 is slower than float32."""
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
    """The training forward's autocast for ``amp`` ('auto', 'bf16': an error without native
    bfloat16, 'off': float32)."""
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
    """One clipped AdamW step on ``x`` [batch, seq + 1] at ``lr``; returns the loss on the
    device (no sync). ``step_model`` is ``model`` or its compiled form."""
    for g in opt.param_groups:
        g["lr"] = lr
    with amp:
        loss = _loss(step_model, x)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    opt.zero_grad(set_to_none=True)
    return loss


# ---------------------------------------------------------------------------- runs

def _prior_run(path: str) -> dict:
    """The summary of the model folder or run folder ``--init-from`` names."""
    folder = Path(path)
    summary = folder / "train_summary.json"
    if _from_checkpoint(path):
        prior = json.loads(summary.read_text()) if summary.is_file() else {}
        step = load_checkpoint(folder / CHECKPOINT)["state"]["step"]
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
    """``new``, ``continued`` (a model's weights, fresh AdamW) or ``carried`` (a checkpoint)."""
    if not init_from:
        return "new"
    return "carried" if _from_checkpoint(init_from) else "continued"


def _from_checkpoint(path: str) -> bool:
    """Whether ``--init-from`` names a run folder with a checkpoint (a model folder has none)."""
    return (Path(path) / CHECKPOINT).is_file()


def _run_entry(prior: dict) -> dict:
    o = prior.get("options", {})
    return {"steps": prior.get("steps_done"), "tokens": prior.get("tokens_seen"), "lr": o.get("lr"),
            "validation_loss": prior.get("validation_loss"), "device": prior.get("device")}


def _with_rates(runs: list[dict], prior: dict) -> list[dict]:
    """Earlier runs' entries with their tokens/s where the summaries allow."""
    runs = [dict(r) for r in runs]
    if runs and prior and runs[-1].get("tokens_per_s") is None and prior.get("minutes"):
        runs[-1]["tokens_per_s"] = round(runs[-1]["tokens"] / (prior["minutes"] * 60))
        rest = prior.get("minutes_total", 0) - prior["minutes"]
        if len(runs) == 2 and runs[0].get("tokens_per_s") is None and rest > 0:
            runs[0]["tokens_per_s"] = round(runs[0]["tokens"] / (rest * 60))
    return runs


# ---------------------------------------------------------------------------- state

def _score(val: float, val_pkg: float | None) -> float:
    """What ``best/`` keeps the lowest of: the mean of the held-out stdlib and package losses,
    since the package is the third-party code users write."""
    return val if val_pkg is None else (val + val_pkg) / 2


def _export(run: Run, summary: dict, dest: Path) -> None:
    """A model folder written beside ``dest`` and renamed into place."""
    o = run.o
    tmp = dest.with_name(dest.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    half = copy.deepcopy(run.model).to("cpu", torch.float16)
    half.save_pretrained(tmp, safe_serialization=True, max_shard_size=f"{o.shard_mb}MB")
    del half
    save_tokenizer(run.tok, tmp, o.max_positions)
    (tmp / "inkling.json").write_text(json.dumps(
        {"fim_family": "inkling", "fim_order": "spm", "trained_context": o.seq_len}, indent=2) + "\n")
    (tmp / "train_summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    write_log(tmp / "training_log.tsv", run.log_rows)
    plot_log(run.log_rows, tmp / "loss_curve.png")
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
    """torch's thread count: fixed (``--threads N``, 0: every core) or, with -1, probed now
    and then against the other count, since on a shared CPU one thread can beat several."""

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
    saved = {"stdlib_repeat": 1, **saved}   # the default of checkpoints without the option
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


# ---------------------------------------------------------------------------- the run

@dataclass
class Run:
    """One invocation of the recipe: what it trains, where it stands (``st``), where it writes."""
    o: TrainOptions
    out: Path
    device: torch.device
    prior: dict
    tok: Tokenizer
    data: Data
    model: LlamaForCausalLM
    step_model: torch.nn.Module
    opt: torch.optim.AdamW
    amp: contextlib.AbstractContextManager
    threads: _Threads | None
    st: dict
    sched: Schedule
    log_rows: list[dict]
    n_params: int

    def summary(self) -> dict:
        """What ``train_summary.json`` holds (and ``train`` returns)."""
        o, st, sched, data = self.o, self.st, self.sched, self.data
        last_val = st["last_val"]
        return {
            "options": asdict(o), "parameters": self.n_params, "tokens_seen": st["tokens"],
            "epochs_started": st["epoch"] - st["first_epoch"] + 1, "steps_done": st["step"],
            "tokens_total": st["prior_tokens"] + st["tokens"], "epochs_total": st["epoch"] + 1,
            "minutes_total": round(st["prior_minutes"] + st["train_seconds"] / 60, 1),
            "runs": _with_rates(st["runs"], self.prior) + [self._this_run()],
            "stopped_early": st["step"] < sched.total, "stopped_by": st["stopped"],
            "final_train_loss": next((r["loss"] for r in reversed(self.log_rows)
                                      if r.get("loss") is not None), None),
            "validation_loss": last_val, "validation_loss_package": st["last_val_pkg"],
            "minutes": round(st["train_seconds"] / 60, 1), "device": str(self.device),
            "train_files": len(data.files), "stdlib_train_files": data.stdlib_files,
            "train_chars": data.chars, "packages": data.packages,
            "held_out_package": data.held_out_package,
            "copies_dropped": data.copies_dropped,
            "held_out_files": [f.relpath for f in data.held_out], "torch": torch.__version__,
            # what `--init-from` these weights needs
            "data_position": {"epoch": st["epoch"], "cursor": st["cursor"],
                              "fingerprint": data.fingerprint, "seed": o.seed},
            "schedule": sched.state(), "step": st["step"],
        }

    def _this_run(self) -> dict:
        """This run's entry in the summary's ``runs``."""
        st = self.st
        return {"steps": st["step"], "tokens": st["tokens"], "lr": self.sched.peak,
                "validation_loss": st["last_val"],
                "validation_loss_package": st["last_val_pkg"],
                "device": str(self.device), "kind": st["kind"],
                "tokens_per_s": round(st["tokens"] / st["train_seconds"])
                if st["train_seconds"] else None,
                "start_validation_loss": st["start_val"],
                "best_validation_loss": st["best_val"],
                "best_step": st["best_step"]}

    def checkpoint(self) -> None:
        """``checkpoint.pt`` (everything an exact resume needs) and the loss log."""
        save_checkpoint({"options": asdict(self.o), "config": self.model.config.to_dict(),
                      "tokenizer": self.tok.to_str(), "model": self.model.state_dict(),
                      "optimizer": self.opt.state_dict(), "schedule": self.sched.state(),
                      "state": self.st, "rng": rng_state(), "prior": self.prior},
                     self.out / CHECKPOINT)
        write_log(self.out / "training_log.tsv", self.log_rows)

    def evaluate(self) -> tuple[float | None, float | None]:
        """The held-out stdlib and held-out package losses."""
        # in float32 whatever trains: validation losses compare across runs and devices
        return (_eval_loss(self.model, self.data.val_rows, self.device, self.o.batch_size),
                _eval_loss(self.model, self.data.val_rows_pkg, self.device, self.o.batch_size))


def _given(o: TrainOptions) -> dict:
    """The options of ``o`` that differ from the defaults (as if named on the command line)."""
    default = TrainOptions()
    return {f.name: getattr(o, f.name) for f in fields(TrainOptions)
            if getattr(o, f.name) != getattr(default, f.name)}


def _resume(o: TrainOptions, given: dict) -> tuple[TrainOptions, dict]:
    """A resume's options (the checkpoint's, updated by ``given``) and its checkpoint."""
    path = Path(o.resume) / CHECKPOINT
    if not path.is_file():
        raise FileNotFoundError(f"--resume {o.resume}: no {CHECKPOINT} there")
    ckpt = load_checkpoint(path)
    o = _options_for_resume(ckpt["options"], given)
    o.out = o.resume = str(Path(given["resume"]))
    return o, ckpt


def _tokenizer(o: TrainOptions, source: dict | None) -> Tokenizer:
    """The checkpoint's or ``--init-from``'s tokenizer, or a new one on the stdlib files."""
    if source:
        return Tokenizer.from_str(source["tokenizer"])
    if o.init_from:
        return Tokenizer.from_file(str(Path(o.init_from) / "tokenizer.json"))
    corpus = load_corpus()
    texts = [f.text for f in (corpus.train[:o.max_files] if o.max_files else corpus.train)]
    return train_tokenizer(texts, o.vocab_size)


def _model(o: TrainOptions, source: dict | None, device: torch.device) -> LlamaForCausalLM:
    """float32 weights on ``device``, training mode: the checkpoint's, ``--init-from``'s or new."""
    hf_logging.disable_progress_bar()
    if source:
        model = LlamaForCausalLM(LlamaConfig.from_dict(source["config"]))
        model.load_state_dict(source["model"])
    elif o.init_from:
        model = LlamaForCausalLM.from_pretrained(o.init_from, dtype=torch.float32)
    else:
        model = LlamaForCausalLM(llama_config(o.vocab_size, o.hidden_size, o.intermediate_size,
                                              o.layers, o.heads, o.kv_heads, o.max_positions))
    model = model.to(device, torch.float32)
    model.train()
    return model


def _resumed_state(o: TrainOptions, ckpt: dict, data: Data,
                   out: Path) -> tuple[dict, Schedule, list[dict]]:
    """A resumed run's state, schedule and log; an error where the training data changed."""
    st = ckpt["state"]
    st["stopped"] = None                   # why the last invocation stopped, not this one
    if st["fingerprint"] != data.fingerprint:
        raise ValueError(f"--resume {o.resume}: the training data changed (fingerprint "
                         f"{data.fingerprint}, the checkpoint's {st['fingerprint']}): the "
                         "wheel cache, the standard library or the recipe differ")
    sched = Schedule.from_state(ckpt["schedule"])
    log_rows = [r for r in read_log(out / "training_log.tsv")
                if not (r["run"] == st["run"] and r["step"] > st["step"])]
    log_rows = fill_missing_runs(log_rows, st["runs"])
    set_rng_state(ckpt["rng"])
    if "best_score" not in st:          # a checkpoint without the score: its best row's
        row = next((r for r in log_rows if r["run"] == st["run"]
                    and r["step"] == st["best_step"] and r.get("val_loss") is not None), None)
        st["best_score"] = _score(row["val_loss"], row.get("val_loss_pkg")) if row else None
    return st, sched, log_rows


def _new_state(o: TrainOptions, prior: dict, data: Data) -> tuple[dict, Schedule, list[dict]]:
    """A new run's state: step 0, at the prior data position if the data is the same."""
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
    log_rows = prior_log(Path(o.init_from), prior) if o.init_from else []
    log_rows = fill_missing_runs(log_rows, runs)
    return st, sched, log_rows


def _set_budget(o: TrainOptions, st: dict, sched: Schedule) -> None:
    """``--cooldown K`` anneals over the next K steps, a changed ``--steps`` stretches the decay."""
    if o.cooldown:
        sched.set_total(st["step"], st["step"] + o.cooldown)
    elif sched.total != o.steps:
        sched.set_total(st["step"], o.steps)
    o.steps = sched.total


def _open_run(o: TrainOptions, ckpt: dict | None) -> Run:
    """The run an invocation trains: from a resume's checkpoint, ``--init-from``, or new."""
    prior = ckpt["prior"] if ckpt else (_prior_run(o.init_from) if o.init_from else {})
    out = Path(o.out)
    out.mkdir(parents=True, exist_ok=True)
    device = device_for(o.device)
    threads = _Threads(o.threads, os.cpu_count() or 1) if device.type == "cpu" else None
    source = ckpt or (load_checkpoint(Path(o.init_from) / CHECKPOINT)
                      if o.init_from and _from_checkpoint(o.init_from) else None)
    tok = _tokenizer(o, source)
    if not ckpt:
        torch.manual_seed(o.seed)
    data = Data(o, tok)
    model = _model(o, source, device)
    opt = adamw(model, o.lr, o.weight_decay)
    if source:          # AdamW's moments go on with the weights, since fresh ones raise the loss
        opt.load_state_dict(source["optimizer"])
    del source
    step_model = torch.compile(model) if o.compile else model
    amp = autocast_for(o.amp, device)
    st, sched, log_rows = (_resumed_state(o, ckpt, data, out) if ckpt else
                           _new_state(o, prior, data))
    _set_budget(o, st, sched)
    return Run(o=o, out=out, device=device, prior=prior, tok=tok, data=data, model=model,
               step_model=step_model, opt=opt, amp=amp, threads=threads, st=st, sched=sched,
               log_rows=log_rows, n_params=sum(p.numel() for p in model.parameters()))


# ---------------------------------------------------------------------------- train

def train(o: TrainOptions, given: dict | None = None) -> dict:
    """Run (or resume) the recipe; returns the summary written to train_summary.json.
    ``given``: the options named on the command line (default: those differing from defaults)."""
    if o.ship:
        return ship(o.ship)
    t_invoked = time.time()
    ckpt = None
    if o.resume:
        o, ckpt = _resume(o, _given(o) if given is None else given)
    run = _open_run(o, ckpt)
    _announce(run, resumed=ckpt is not None)
    if o.profile_steps:
        return _profile(run)
    if ckpt is None and o.init_from and o.eval_every:
        _evaluate_start(run)
    _train_steps(run)
    s = _finish(run)
    print(f"this invocation: {(time.time() - t_invoked) / 60:.1f} min", flush=True)
    return s


def _announce(run: Run, resumed: bool) -> None:
    o, st, sched = run.o, run.st, run.sched
    kind = "resuming" if resumed else ("continuing from " + o.init_from if o.init_from else "new run")
    print(f"{kind}: run {st['run']}, step {st['step']} of {sched.total}, model "
          f"{run.n_params / 1e6:.2f} M parameters on {run.device} ({torch.get_num_threads()} "
          f"threads, autocast {amp_name(run.amp)}), batch {o.batch_size} x {o.seq_len}, "
          f"peak lr {sched.peak:g}, floor {sched.floor:g}, "
          f"warm-up {sched.warmup}; data epoch {st['epoch']} row {st['cursor']}; "
          f"{st['prior_tokens'] / 1e6:.2f} M tokens before this run", flush=True)
    if o.init_from and not resumed:
        print("continuing from a run's checkpoint, its weights and AdamW moments: a new run "
              "(a new warm-up and decay)" if _from_checkpoint(o.init_from) else
              "continuing from a model's weights: a new run (AdamW moments start at zero, "
              "a new warm-up and decay)", flush=True)


def _evaluate_start(run: Run) -> None:
    """The validation losses where a continued run starts: the score ``best/`` must beat."""
    st = run.st
    v, vp = run.evaluate()
    st["start_val"], st["last_val"], st["last_val_pkg"] = v, v, vp
    st["best_val"], st["best_step"] = v, 0   # best/ is written only when it beats the start
    st["best_score"] = _score(v, vp)
    print(f"start: validation loss {v:.4f} (held-out stdlib)"
          + (f", {vp:.4f} (held-out package)" if vp is not None else ""), flush=True)
    run.log_rows.append({"run": st["run"], "step": 0, "tokens": 0,
                         "tokens_total": st["prior_tokens"], "loss": None, "lr": None,
                         "val_loss": v, "val_loss_pkg": vp, "elapsed_s": 0.0})


def _train_steps(run: Run) -> None:
    """Steps until the budget is spent or the invocation stops, with evaluations and checkpoints."""
    o, st = run.o, run.st
    t_seg = time.time()          # training time of this invocation, added to train_seconds
    base_seconds = st["train_seconds"]
    last_ckpt = time.time()
    window = _Window()
    with _Stop() as stop:
        while st["step"] < run.sched.total:
            st["stopped"] = _stop_reason(o, st, stop)
            if st["stopped"] is not None:
                break
            loss, lr, tokens, epoch_rows = _step(run, t_seg, base_seconds)
            window.add(loss, tokens)
            last = st["step"] >= run.sched.total
            val, val_pkg = _evaluate_due(run, last)
            run.log_rows.append({"run": st["run"], "step": st["step"], "tokens": st["tokens"],
                                 "tokens_total": st["prior_tokens"] + st["tokens"],
                                 "loss": loss, "lr": lr, "val_loss": val, "val_loss_pkg": val_pkg,
                                 "elapsed_s": round(st["train_seconds"], 1)})
            if o.log_every and (st["step"] % o.log_every == 0 or last or val is not None):
                window.report(st, run.sched.total, lr, epoch_rows)
            if val is not None:
                _keep_best(run, val, val_pkg)
            if time.time() - last_ckpt > o.checkpoint_minutes * 60:
                run.checkpoint()
                last_ckpt = time.time()
                print(f"checkpoint at step {st['step']} -> {run.out / CHECKPOINT}", flush=True)
        run.checkpoint()


def _stop_reason(o: TrainOptions, st: dict, stop: _Stop) -> str | None:
    """Why the invocation stops before the next step (None: it goes on)."""
    if stop.signal is not None:
        return signal.Signals(stop.signal).name
    if o.stop_at and st["step"] >= o.stop_at:
        return "stop_at"
    if o.max_minutes and st["train_seconds"] / 60 >= o.max_minutes:
        return "max_minutes"
    return None


def _step(run: Run, t_seg: float, base_seconds: float) -> tuple[float, float, int, int]:
    """One optimizer step at the data position; returns (loss, lr, tokens, the epoch's rows)."""
    o, st = run.o, run.st
    t_step = time.perf_counter()
    rows = run.data.rows(st["epoch"])
    if st["cursor"] + o.batch_size > len(rows):
        st["epoch"], st["cursor"] = st["epoch"] + 1, 0
        rows = run.data.rows(st["epoch"])
    x = torch.from_numpy(rows[st["cursor"]:st["cursor"] + o.batch_size].astype(np.int64))
    x = x.to(run.device)                                    # [batch, seq + 1]
    lr = run.sched.lr(st["step"])
    loss = optimizer_step(run.model, run.step_model, run.opt, x, lr, run.amp)
    st["cursor"] += o.batch_size
    st["step"] += 1
    if run.threads is not None:
        run.threads.step_done(st["step"], time.perf_counter() - t_step)
    n_tok = x[:, 1:].numel()
    st["tokens"] += n_tok
    st["train_seconds"] = base_seconds + time.time() - t_seg
    return loss.item(), lr, n_tok, len(rows)


def _evaluate_due(run: Run, last: bool) -> tuple[float | None, float | None]:
    """The validation losses where an evaluation is due, else (None, None)."""
    o, st = run.o, run.st
    if not (o.eval_every and (st["step"] % o.eval_every == 0 or last)):
        return None, None
    val, val_pkg = run.evaluate()
    st["last_val"], st["last_val_pkg"] = val, val_pkg
    return val, val_pkg


def _keep_best(run: Run, val: float, val_pkg: float | None) -> None:
    """An evaluation told; ``best/`` rewritten where its score beats the best so far."""
    st = run.st
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
        _export(run, run.summary(), run.out / "best")


class _Window:
    """The training losses and tokens since the last progress line."""

    def __init__(self):
        self.losses, self.tokens, self.t = [], 0, time.time()

    def add(self, loss: float, tokens: int) -> None:
        self.losses.append(loss)
        self.tokens += tokens

    def report(self, st: dict, total: int, lr: float, epoch_rows: int) -> None:
        """The progress line; the window starts again."""
        dt = time.time() - self.t
        print(f"step {st['step']}/{total} | loss {np.mean(self.losses):.4f} | "
              f"lr {lr:.3g} | {self.tokens / max(dt, 1e-9):.0f} tok/s | tokens "
              f"{st['tokens'] / 1e6:.2f} M (all runs {(st['prior_tokens'] + st['tokens']) / 1e6:.2f} M) | "
              f"epoch {st['epoch']} row {st['cursor']}/{epoch_rows} | "
              f"{st['train_seconds'] / 60:.1f} min", flush=True)
        self.losses, self.tokens, self.t = [], 0, time.time()


def _finish(run: Run) -> dict:
    """The end of an invocation: the final export once the budget is spent, summary and curve."""
    st, out = run.st, run.out
    done = st["step"] >= run.sched.total
    print(("budget done" if done else f"stopped ({st['stopped']})")
          + f" at step {st['step']}: checkpoint {out / CHECKPOINT}"
          + ("" if done else f"; go on with `inkling train --resume {out}`"), flush=True)
    s = run.summary()
    if done:
        if st["last_val"] is None or run.log_rows[-1].get("val_loss") is None:
            st["last_val"], st["last_val_pkg"] = run.evaluate()
            s = run.summary()
        _export(run, s, out)
        print(f"done: validation loss {st['last_val']:.3f} after {st['tokens'] / 1e6:.2f} M "
              f"tokens in {s['minutes']} min -> {out}", flush=True)
    else:
        (out / "train_summary.json").write_text(json.dumps(s, indent=2) + "\n")
    plot_log(run.log_rows, out / "loss_curve.png")
    return s


def _profile(run: Run) -> dict:
    """Time ``o.profile_steps`` training steps after warm-up ones (nothing is saved)."""
    o, model, opt = run.o, run.model, run.opt
    rows = run.data.rows(run.st["epoch"])
    parts = {"data": [], "forward": [], "backward": [], "optimizer": []}
    for i in range(o.profile_steps + 2):
        t0 = time.perf_counter()
        c = (run.st["cursor"] + i * o.batch_size) % (len(rows) - o.batch_size)
        x = torch.from_numpy(rows[c:c + o.batch_size].astype(np.int64)).to(run.device)
        t1 = time.perf_counter()
        with run.amp:
            loss = _loss(run.step_model, x)
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
    amp = amp_name(run.amp)
    print(f"profile: batch {o.batch_size} x {o.seq_len}, {torch.get_num_threads()} threads, "
          f"compile {o.compile}, amp {amp}: {tps:.0f} tokens/s; per step (median of "
          f"{o.profile_steps}) "
          + ", ".join(f"{k} {1000 * v:.0f} ms ({100 * v / total:.0f}%)" for k, v in med.items()),
          flush=True)
    return {"tokens_per_s": tps, "ms": {k: 1000 * v for k, v in med.items()},
            "batch_size": o.batch_size, "seq_len": o.seq_len, "threads": torch.get_num_threads(),
            "compile": o.compile, "amp": amp}
