"""The GPU training command, end to end on the CPU at a tiny size (training/gpu_run.py via
scripts/gpu_train.sh), so that a GPU never finds a broken script."""
from __future__ import annotations

import json
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import torch
from transformers import LlamaForCausalLM

from inkling.training import packing
from inkling.training.gpu_run import SHAPES, check_fits, model_config, wsd_lr

REPO = Path(__file__).resolve().parents[2]


def test_the_schedule_warms_up_holds_and_decays_to_zero_by_the_clock():
    assert wsd_lr(1.0, 0, 0.0, 0.2) == pytest.approx(0.01)
    assert wsd_lr(1.0, 500, 0.5, 0.2) == 1.0
    assert wsd_lr(1.0, 500, 0.9, 0.2) == pytest.approx(0.5)
    assert wsd_lr(1.0, 500, 1.0, 0.2) == 0.0


def test_a_model_too_large_to_come_back_is_refused_before_training():
    check_fits(LlamaForCausalLM(model_config("tiny", 8192)))
    big = torch.nn.Linear(6000, 6000)          # 36 M weights: 72 MB as float16
    with pytest.raises(ValueError, match="come back"):
        check_fits(big)
    assert set(SHAPES) >= {"tiny", "bundled", "x4"}


@pytest.mark.slow
def test_the_device_command_runs_end_to_end_on_the_cpu(tmp_path):
    """pack (a few files of each source) -> scripts/gpu_train.sh --device cpu --minutes
    0.2 --scratch --shape tiny, with an allow-listed installed package -> the results, and
    a model folder that loads."""
    data, out = tmp_path / "packed", tmp_path / "out"
    packing.pack(data, max_files=4, seq_len=128)
    done = subprocess.run(
        ["bash", str(REPO / "scripts" / "gpu_train.sh"), "--data", str(data), "--out", str(out),
         "--device", "cpu", "--minutes", "0.2", "--scratch", "--shape", "tiny", "--seq", "64",
         "--allow-list", "tqdm"], env={"PYTHON": sys.executable, "PATH": "/usr/bin:/bin"},
        capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    r = json.loads((out / "result.json").read_text())
    assert r["steps"] > 0 and r["tokens"] == r["steps"] * r["batch"] * 64
    assert set(r["held_out_end"]) == {"stdlib", "toolz", "funcy", "humanize", "schedule", "semver"}
    assert r["held_out_end"]["stdlib"] < r["held_out_start"]["stdlib"]
    assert r["data"]["allow_list"]["packages"]["tqdm"]["files"] > 0
    curve = (out / "loss_curve.csv").read_text().splitlines()
    assert curve[0] == "step,tokens,elapsed_s,lr,loss"
    assert int(curve[-1].split(",")[0]) == r["steps"]        # the last steps logged too
    assert len(list(out.iterdir())) <= 8
    parts = sorted(out.glob("model.tar.*"))
    (tmp_path / "model.tar").write_bytes(b"".join(p.read_bytes() for p in parts))
    with tarfile.open(tmp_path / "model.tar") as tar:
        tar.extractall(tmp_path, filter="data")
    model = LlamaForCausalLM.from_pretrained(tmp_path / "model", dtype=torch.float32)
    assert model.config.hidden_size == SHAPES["tiny"][0]
    assert (tmp_path / "model" / "tokenizer.json").read_text() == (data / "tokenizer.json").read_text()


def test_the_total_minutes_cut_the_training_to_what_is_left():
    from argparse import Namespace
    from inkling.training.gpu_run import train_seconds
    a = Namespace(minutes=9.0, total_minutes=10.0, reserve=30.0)
    assert train_seconds(a, 20.0) == 9 * 60
    assert train_seconds(a, 100.0) == 10 * 60 - 130
    assert train_seconds(Namespace(minutes=9.0, total_minutes=0.0, reserve=30.0), 300) == 540
    with pytest.raises(ValueError, match="no time is left"):
        train_seconds(a, 580.0)
