"""What int8 weights cost and save: a one-row decoding step on float16 panels against int8
panels, interleaved, and the held-out loss of the bundled model in float16 and in int8.

    python benchmarks/int8.py [--context 600] [--steps 40] [--rounds 6] [--rows 40]
                              [--out FILE] [--quick] [--json OUT]

A one-row step of the native forward reads every weight once: its time is the time to
stream the panels (runtime/native_llama.py). Two models: the bundled one (float16 shards)
and a random-weight one of the ``x4`` shape of training/gpu_run.py (about 23.6 M
parameters: four times the bundled model's, what int8 holds in 25 MB), each loaded from
its float16 folder (float16 panels) and from its int8 conversion (training/int8_convert.py:
int8 panels), one thread. Rounds alternate between the four, in turn and reversed; each
round times ``--steps`` one-row steps after ``--context`` cached tokens (wall ms and this
thread's CPU ms a token, the median of the round), and the table gives the median of
the rounds' medians. Appends the table, with the commit and the date, to ``--out``.

The loss: the validation rows ``inkling train`` evaluates on (training/data.py: the
held-out standard-library files, toolz 1.0.0), ``--rows`` of each, each folder loaded by
the runtime's loader (int8 dequantized) and run by transformers' forward in float32: the
mean next-token loss of each set, float16 and int8.
"""
from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from tokenizers import Tokenizer
from transformers import LlamaForCausalLM

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import parser, write_json  # noqa: E402

from inkling.cache.prompt_cache import PromptCache  # noqa: E402
from inkling.evaluation.packages import load_held_out_package  # noqa: E402
from inkling.models import BUNDLED_MODEL_DIR  # noqa: E402
from inkling.models.corpus import load_corpus  # noqa: E402
from inkling.runtime.model_loader import load_runtime  # noqa: E402
from inkling.training.gpu_run import model_config  # noqa: E402
from inkling.training.int8_convert import convert  # noqa: E402
from inkling.training.samples import build_rows, build_training_rows  # noqa: E402
from inkling.training.tokenizer_recipe import save_tokenizer  # noqa: E402
from inkling.training.training import _eval_loss  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
SEQ, SEED = 1024, 1234 + 999        # the validation rows of ``inkling train``


def random_folder(dest: Path) -> Path:
    """A random-weight model of the x4 shape, float16 shards, the bundled tokenizer."""
    tok = Tokenizer.from_file(str(BUNDLED_MODEL_DIR / "tokenizer.json"))
    torch.manual_seed(0)
    LlamaForCausalLM(model_config("x4", tok.get_vocab_size())).to(torch.float16) \
        .save_pretrained(dest, safe_serialization=True, max_shard_size="12MB")
    save_tokenizer(tok, dest, 2048)
    (dest / "inkling.json").write_text((BUNDLED_MODEL_DIR / "inkling.json").read_text())
    return dest


def one_round(rt, context: int, steps: int) -> tuple[float, float]:
    """(wall ms, CPU ms) a one-row step: the medians of ``steps`` steps."""
    c = PromptCache(rt, "full", forward="native")
    c.extend([(i * 7919) % 8000 + 3 for i in range(context)], last_only=True)
    wall, cpu = [], []
    for i in range(steps):
        w, t = time.perf_counter(), time.thread_time()
        c.extend([(i * 31) % 8000 + 3])
        wall.append((time.perf_counter() - w) * 1000)
        cpu.append((time.thread_time() - t) * 1000)
    return statistics.median(wall), statistics.median(cpu)


def held_out_rows(tok: Tokenizer, rows: int) -> dict[str, np.ndarray]:
    return {"stdlib": build_rows([f.text for f in load_corpus().held_out], tok, SEQ, SEED,
                                 0.5)[:rows],
            "toolz": build_training_rows(load_held_out_package(), tok, SEQ, SEED, 0.5,
                                         0.25)[:rows]}


def losses(folder: str, sets: dict[str, np.ndarray]) -> dict[str, float]:
    rt = load_runtime(folder, device="cpu", dtype="float32", forward="reference")
    return {k: _eval_loss(rt.model, v, torch.device("cpu"), 4) for k, v in sets.items()}


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--context", type=int, default=600)
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--rows", type=int, default=40, help="validation rows of each set")
    ap.add_argument("--out", help="append the step table here")
    a = ap.parse_args()
    if a.quick:
        a.context, a.steps, a.rounds, a.rows = 100, 4, 1, 1
    tmp = Path(tempfile.mkdtemp())
    big = random_folder(tmp / "x4")
    folders = {"bundled float16": BUNDLED_MODEL_DIR, "bundled int8": tmp / "b8",
               "x4 float16": big, "x4 int8": tmp / "x48"}
    convert(BUNDLED_MODEL_DIR, folders["bundled int8"])
    convert(big, folders["x4 int8"])
    rts = {k: load_runtime(v, device="cpu", dtype="float32", threads=1) for k, v in folders.items()}
    for k, rt in rts.items():
        panels = rt.native_forward().weights[1]
        print(f"{k}: {sum(p.numel() for p in rt.model.parameters()) / 1e6:.2f} M parameters, "
              f"{panels.dtype} panels", flush=True)
    got = {k: [] for k in rts}
    for r in range(a.rounds):
        for k in (list(rts) if r % 2 == 0 else list(rts)[::-1]):
            got[k].append(one_round(rts[k], a.context, a.steps))
    commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    lines = [f"# int8 panels against float16 panels, a one-row step after {a.context} cached "
             f"tokens, 1 thread ({a.rounds} interleaved rounds of {a.steps} steps; median of "
             f"the rounds' medians)",
             f"# commit {commit}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
             f"other work ran: yes (a shared 2-core CPU)",
             f"{'model':<18} {'params (M)':>10} {'wall ms/token':>14} {'CPU ms/token':>13}"]
    for k, rt in rts.items():
        n = sum(p.numel() for p in rt.model.parameters()) / 1e6
        lines.append(f"{k:<18} {n:>10.2f} {statistics.median(w for w, _ in got[k]):>14.3f} "
                     f"{statistics.median(c for _, c in got[k]):>13.3f}")
    text = "\n".join(lines) + "\n\n"
    print(text, end="")
    if a.out:
        with open(a.out, "a") as f:
            f.write(text)
    sets = held_out_rows(Tokenizer.from_file(str(BUNDLED_MODEL_DIR / "tokenizer.json")), a.rows)
    loss = {"float16": losses(str(BUNDLED_MODEL_DIR), sets),
            "int8": losses(str(folders["bundled int8"]), sets)}
    print("held-out loss (nats), bundled model: " + ", ".join(
        f"{k} {loss['float16'][k]:.4f} float16, {loss['int8'][k]:.4f} int8" for k in sets))
    write_json(a.json, {"step_wall_ms": {k.replace(" ", "_"): statistics.median(w for w, _ in got[k])
                                         for k in rts},
                        "loss": loss})


if __name__ == "__main__":
    main()
