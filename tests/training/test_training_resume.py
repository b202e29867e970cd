"""Exact resume of `inkling train`: N steps, a checkpoint, M more steps is bit for bit the
run of N + M steps; a signal stops after the step with a checkpoint; the budget extends."""
import json
import os
import signal
import subprocess
import sys

import pytest
import torch

from inkling.training import training
from inkling.training.checkpoint_file import KEYS, load_checkpoint, set_rng_state
from inkling.training.schedule import Schedule
from inkling.training.train_options import TrainOptions
from inkling.training.training import CHECKPOINT, train

TINY = dict(vocab_size=300, hidden_size=32, layers=1, heads=2, kv_heads=1, intermediate_size=64,
            seq_len=64, batch_size=2, eval_every=4, eval_rows=2, max_files=8, warmup=2,
            packages=False, log_every=0, threads=1)


def _state(folder):
    return torch.load(folder / CHECKPOINT, map_location="cpu", weights_only=True)


def _assert_same(a, b):
    assert a["model"].keys() == b["model"].keys()
    for k in a["model"]:
        assert torch.equal(a["model"][k], b["model"][k]), k
    sa, sb = a["optimizer"]["state"], b["optimizer"]["state"]
    assert sa.keys() == sb.keys()
    for k in sa:
        for name in ("exp_avg", "exp_avg_sq", "step"):
            assert torch.equal(sa[k][name], sb[k][name]), (k, name)
    for key in ("step", "tokens", "epoch", "cursor"):
        assert a["state"][key] == b["state"][key], key
    assert a["schedule"] == b["schedule"]


@pytest.mark.slow                    # trains a model
def test_resume_is_bit_identical_to_one_run(tmp_path):
    # several epochs of a small corpus, so the data position crosses an epoch boundary
    opts = dict(TINY, steps=12, max_files=2, batch_size=8)
    one = tmp_path / "one"
    train(TrainOptions(out=str(one), **opts))
    two = tmp_path / "two"
    first = train(TrainOptions(out=str(two), stop_at=7, **opts))
    assert first["steps_done"] == 7 and first["stopped_by"] == "stop_at"
    assert not (two / "model.safetensors").exists() and (two / CHECKPOINT).is_file()
    again = train(TrainOptions(resume=str(two)), {"resume": str(two)})
    assert again["steps_done"] == 12 and not again["stopped_early"]
    assert again["stopped_by"] is None          # the first invocation's stop is not this one's
    a, b = _state(one), _state(two)
    assert a["state"]["epoch"] > a["state"]["first_epoch"], "the test should cross an epoch"
    _assert_same(a, b)
    # the final exports agree too, and the log holds every step once
    assert again["validation_loss"] == json.loads((one / "train_summary.json").read_text())[
        "validation_loss"]
    steps = [line.split("\t")[1] for line in (two / "training_log.tsv").read_text().splitlines()[1:]]
    assert steps == [str(i) for i in range(1, 13)]


@pytest.mark.slow                    # trains a model
def test_a_signal_finishes_the_step_saves_and_returns(tmp_path, monkeypatch):
    calls = {"n": 0}
    real_loss = training._loss

    def loss_then_signal(model, x):
        calls["n"] += 1
        if calls["n"] == 3 and model.training:
            signal.raise_signal(signal.SIGTERM)     # arrives in the middle of step 3
        return real_loss(model, x)

    monkeypatch.setattr(training, "_loss", loss_then_signal)
    out = tmp_path / "sig"
    s = train(TrainOptions(out=str(out), steps=50, **dict(TINY, eval_every=0)))
    assert s["stopped_by"] == "SIGTERM" and s["steps_done"] == 3
    assert _state(out)["state"]["step"] == 3
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL or callable(
        signal.getsignal(signal.SIGTERM))
    assert not list(out.glob("*.tmp"))


@pytest.mark.slow                    # trains a model
def test_resume_extends_the_budget_without_a_jump(tmp_path):
    out = tmp_path / "ext"
    train(TrainOptions(out=str(out), steps=6, **TINY))
    before = Schedule.from_state(_state(out)["schedule"])
    assert before.total == 6
    s = train(TrainOptions(resume=str(out), steps=10), {"resume": str(out), "steps": 10})
    assert s["steps_done"] == 10
    sched = Schedule.from_state(_state(out)["schedule"])
    assert sched.total == 10 and len(sched.segments) == 2
    # the new segment starts at the rate the old budget had reached (the floor here)
    assert sched.segments[1][:2] == [6, pytest.approx(before.lr(6))]
    with pytest.raises(ValueError, match="cannot change on resume"):
        train(TrainOptions(resume=str(out), lr=0.5), {"resume": str(out), "lr": 0.5})


def test_schedule_stretches_and_cools_down_continuously():
    s = Schedule.new(1e-3, 0.1, 10, 1000)
    assert s.lr(0) == pytest.approx(1e-4) and s.lr(9) == pytest.approx(1e-3)
    assert s.lr(10) == pytest.approx(1e-3) and s.lr(1000) == pytest.approx(1e-4)
    at = s.lr(400)
    s.set_total(400, 4000)                       # extend: decay from here over the new budget
    assert s.lr(400) == pytest.approx(at) and s.lr(399) < at * 1.01
    assert s.lr(4000) == pytest.approx(1e-4) and s.lr(2200) < at
    at = s.lr(1000)
    s.set_total(1000, 1100)                      # cool down over the next 100 steps
    assert s.lr(1000) == pytest.approx(at) and s.lr(1100) == pytest.approx(1e-4)
    assert all(s.lr(i) >= s.lr(i + 1) for i in range(10, 1200))
    w = Schedule.new(1e-3, 0.1, 10, 100)
    w.set_total(5, 500)                          # during the warm-up: only the end moves
    assert w.segments == [[10, 1e-3, 500]]
    assert Schedule.from_state(s.state()).state() == s.state()


@pytest.mark.slow                    # trains a model
def test_resume_refuses_a_missing_checkpoint_or_changed_data(tmp_path):
    with pytest.raises(FileNotFoundError, match="no checkpoint.pt"):
        train(TrainOptions(resume=str(tmp_path / "nowhere")), {"resume": str(tmp_path / "nowhere")})
    out = tmp_path / "fp"
    train(TrainOptions(out=str(out), steps=3, stop_at=2, **TINY))
    ckpt = _state(out)
    ckpt["state"]["fingerprint"] = "0" * 16
    torch.save(ckpt, out / CHECKPOINT)
    with pytest.raises(ValueError, match="training data changed"):
        train(TrainOptions(resume=str(out)), {"resume": str(out)})


@pytest.mark.slow                    # trains a model
def test_a_stopped_run_goes_on_as_a_new_run_from_its_checkpoint(tmp_path):
    """``--init-from`` a stopped run's folder (new data, say): its checkpoint's weights,
    AdamW moments and tokenizer, a new run after it in the log and the token count."""
    first_dir = tmp_path / "first"
    first = train(TrainOptions(out=str(first_dir), steps=20, stop_at=4, **TINY))
    assert first["stopped_by"] == "stop_at" and not (first_dir / "config.json").exists()
    second = train(TrainOptions(out=str(tmp_path / "second"), init_from=str(first_dir),
                                steps=4, **dict(TINY, max_files=4)))
    runs = second["runs"]
    assert len(runs) == 2 and runs[-1]["kind"] == "carried"
    # the new run starts from the checkpoint's weights: the same held-out loss
    assert runs[-1]["start_validation_loss"] == first["validation_loss"]
    assert second["tokens_total"] == first["tokens_total"] + second["tokens_seen"]
    # AdamW's state went on from the first run's 4 steps (its step count with it)
    steps = {int(v["step"]) for v in _state(tmp_path / "second")["optimizer"]["state"].values()}
    assert steps == {4 + second["steps_done"]}
    log = (tmp_path / "second" / "training_log.tsv").read_text().splitlines()[1:]
    assert {line.split("\t")[0] for line in log} == {"1", "2"}
    # a finished run's folder (its export beside the checkpoint) carries its moments too
    third = train(TrainOptions(out=str(tmp_path / "third"), init_from=str(tmp_path / "second"),
                               steps=2, **dict(TINY, max_files=4)))
    assert [r["kind"] for r in third["runs"]][-1] == "carried" and not third["stopped_by"]
    steps = {int(v["step"]) for v in _state(tmp_path / "third")["optimizer"]["state"].values()}
    assert steps == {4 + second["steps_done"] + third["steps_done"]}
    # a summary that is not the checkpoint's (a run still going) is refused
    summary = json.loads((first_dir / "train_summary.json").read_text())
    (first_dir / "train_summary.json").write_text(json.dumps(dict(summary, step=3)))
    with pytest.raises(ValueError, match="stop that run first"):
        train(TrainOptions(out=str(tmp_path / "fourth"), init_from=str(first_dir), **TINY))


class _Payload:
    """A pickled object that, rebuilt by a full unpickler, makes the folder ``marker``."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return os.makedirs, (self.marker,)


def test_a_checkpoint_that_carries_a_payload_is_refused_in_one_line(tmp_path):
    run, marker = tmp_path / "run", tmp_path / "ran"
    run.mkdir()
    torch.save({"options": _Payload(marker), "model": {"w": torch.zeros(2)}}, run / CHECKPOINT)
    proc = subprocess.run([sys.executable, "-m", "inkling.cli.main", "train", "--resume",
                           str(run)], capture_output=True, text=True, timeout=300)
    assert not marker.exists(), "loading the checkpoint ran its payload"
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert len(lines) == 1, proc.stderr
    assert str(run / CHECKPOINT) in lines[0] and "could run code" in lines[0], lines[0]
    with pytest.raises(ValueError, match="could run code"):       # --init-from reads it so too
        train(TrainOptions(out=str(tmp_path / "new"), init_from=str(run), **TINY))
    assert not marker.exists()


def test_numpy_generator_states_as_numpy_keeps_them_load_without_a_full_unpickler(tmp_path):
    """A checkpoint holding numpy's state as a tuple of an array (as np.random.get_state gives
    it) is read with weights_only and resumes numpy's, Python's and torch's generators."""
    import random

    import numpy as np
    np.random.seed(5)
    random.seed(5)
    state = {"torch": torch.get_rng_state(), "numpy": np.random.get_state(),
             "python": random.getstate()}
    torch.save({**{key: {} for key in KEYS}, "rng": state}, tmp_path / CHECKPOINT)
    drawn = (np.random.rand(), random.random(), torch.rand(1).item())
    np.random.seed(9)
    random.seed(9)
    set_rng_state(load_checkpoint(tmp_path / CHECKPOINT)["rng"])
    assert (np.random.rand(), random.random(), torch.rand(1).item()) == drawn


def test_a_checkpoint_without_its_parts_is_one_line(tmp_path):
    torch.save({"model": {}}, tmp_path / CHECKPOINT)
    with pytest.raises(ValueError, match=r"checkpoint.pt is not a checkpoint of inkling "
                                         r"train: it lacks options, config"):
        load_checkpoint(tmp_path / CHECKPOINT)
    (tmp_path / CHECKPOINT).write_bytes(b"not a zip")
    with pytest.raises(ValueError, match=r"checkpoint.pt cannot be read: "):
        load_checkpoint(tmp_path / CHECKPOINT)
