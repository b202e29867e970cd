"""The training recipe end to end, scaled down: every artefact is written and loads."""
import json

import pytest

from inkling.runtime.model_loader import load_runtime
from inkling.training.samples import build_rows, chunk_file, make_piece
from inkling.training.train_options import TrainOptions
from inkling.training.training import train


def test_fim_pieces_use_both_orders_and_keep_the_text():
    import random
    rng = random.Random(0)
    chunk = "def f(a):\n    return a + 1\n\n\nclass B:\n    x = 2\n"
    orders = set()
    for _ in range(200):
        parts = make_piece(chunk, rng).parts
        specials = [t for t, sp in parts if sp]
        texts = [t for t, sp in parts if not sp]
        if len(specials) == 1:
            assert texts == [chunk]
            continue
        orders.add("psm" if specials[1] == "<|fim_suffix|>" and texts and
                   parts[1][1] is False else "spm")
        assert sorted("".join(texts)) == sorted(chunk)
    assert orders == {"psm", "spm"}
    assert "".join(chunk_file(chunk * 50, 300)) == chunk * 50


@pytest.mark.slow                    # trains a model
def test_recipe_writes_a_loadable_model(tmp_path):
    out = tmp_path / "m"
    summary = train(TrainOptions(out=str(out), vocab_size=300, hidden_size=32, layers=1, heads=2,
                                 kv_heads=1, intermediate_size=64, seq_len=64, batch_size=2,
                                 steps=3, eval_every=2, eval_rows=2, max_files=12, warmup=1,
                                 packages=False, log_every=0))
    for name in ("config.json", "tokenizer.json", "tokenizer_config.json", "training_log.tsv",
                 "loss_curve.png", "train_summary.json", "inkling.json"):
        assert (out / name).is_file(), name
    assert list(out.glob("*.safetensors"))
    assert summary["steps_done"] == 3 and summary["validation_loss"] > 0
    log_lines = (out / "training_log.tsv").read_text().splitlines()
    assert log_lines[0].startswith("run\tstep\ttokens\ttokens_total\tloss") and len(log_lines) == 4
    rt = load_runtime(out, device="cpu")
    assert rt.fim.family == "inkling" and json.loads((out / "inkling.json").read_text())
    # a second run continues this model (its export alone, as the bundled model is): same
    # tokenizer, its weights, the runs recorded, AdamW moments from zero
    (out / "checkpoint.pt").unlink()
    more = tmp_path / "m2"
    again = train(TrainOptions(out=str(more), init_from=str(out), seq_len=64, batch_size=2,
                               steps=2, eval_every=2, eval_rows=2, max_files=12, warmup=1,
                               packages=False, log_every=0))
    assert (more / "tokenizer.json").read_text() == (out / "tokenizer.json").read_text()
    assert [r["steps"] for r in again["runs"]] == [3, 2]
    assert [r["kind"] for r in again["runs"]] == ["new", "continued"]
    # the log goes on across runs: run 1's steps, then run 2's from its starting evaluation
    runs = [line.split("\t")[:2] for line in (more / "training_log.tsv").read_text().splitlines()[1:]]
    assert runs == [["1", "1"], ["1", "2"], ["1", "3"], ["2", "0"], ["2", "1"], ["2", "2"]]
    assert again["data_position"]["fingerprint"] and again["schedule"]["segments"]
    assert again["tokens_total"] == summary["tokens_seen"] + again["tokens_seen"]
    assert again["parameters"] == summary["parameters"]
    with pytest.raises(FileNotFoundError, match="--init-from"):
        train(TrainOptions(out=str(tmp_path / "m3"), init_from=str(tmp_path / "nowhere")))


@pytest.mark.slow                    # trains a model
def test_ship_copies_the_best_export_and_writes_the_card(tmp_path):
    import shutil

    from inkling.training.ship import ship
    run = tmp_path / "run"
    train(TrainOptions(out=str(run), vocab_size=300, hidden_size=32, layers=1, heads=2, kv_heads=1,
                       intermediate_size=64, seq_len=64, batch_size=2, steps=4, eval_every=2,
                       eval_rows=2, max_files=6, warmup=1, packages=False, log_every=0,
                       stop_at=2))
    assert (run / "best" / "config.json").is_file() and not (run / "config.json").exists()
    dest = tmp_path / "bundled"
    shutil.copytree(run / "best", dest)
    for p in dest.glob("*.safetensors"):
        p.unlink()
    summary = ship(str(run), dest)
    assert summary["steps_done"] == 2 and list(dest.glob("*.safetensors"))
    card = (dest / "README.md").read_text()
    assert "not been measured on these weights yet" in card and "## Runs" in card
    assert "<|file_sep|>{path of a neighbour}" in card
    # the evaluation's figures go into the card and stay there for these weights
    from inkling.training.model_card import write_model_card
    evals = [{"fim_order": "spm", "held_out": "stdlib", "lines": 10, "exact": 2,
              "exact_match": 0.2, "latency_ms_p50": 5.0},
             {"fim_order": "spm", "held_out": "package", "lines": 10, "exact": 1,
              "exact_match": 0.1, "latency_ms_p50": 5.0}]
    write_model_card(dest, evals, "inkling evaluate --write-card")
    write_model_card(dest, None, "")
    card = (dest / "README.md").read_text()
    assert "| held-out package (toolz 1.0.0) | spm | greedy | 10 | 1 | 10.0% |" in card
    # the package filters are told as the weights' recipe had them
    import json
    summary_path = dest / "train_summary.json"
    made = json.loads(summary_path.read_text())
    assert "copies_dropped" in made
    summary_path.write_text(json.dumps(dict(made, packages=["demo==1.0"], copies_dropped=[
        "demo==1.0:demo/sched.py holds 30 of the 40 distinctive lines of held-out sched.py"])))
    write_model_card(dest, None, "")
    card = (dest / "README.md").read_text()
    assert "`_vendor`" in card and "`demo==1.0:demo/sched.py holds 30 of the 40" in card
    summary_path.write_text(json.dumps({k: v for k, v in dict(made, packages=["demo==1.0"]).items()
                                        if k != "copies_dropped"}))
    write_model_card(dest, None, "")           # weights of the recipe before those filters
    card = (dest / "README.md").read_text()
    assert "`_vendor`" not in card and "distinctive lines" not in card
    # another tokenizer is refused
    (dest / "tokenizer.json").write_text((dest / "tokenizer.json").read_text().replace("fim", "fIm"))
    with pytest.raises(ValueError, match="tokenizer"):
        ship(str(run), dest)


def test_bfloat16_autocast_where_native_and_an_error_where_asked_and_not(monkeypatch, tmp_path):
    """--amp: auto takes bfloat16 where the device computes it natively, off never, bf16
    asked on a device without it is an error naming the flag; a run under bfloat16
    autocast trains and evaluates in float32 (its validation losses compare)."""
    import contextlib

    import torch

    from inkling.training import training as t
    cpu = torch.device("cpu")
    assert isinstance(t.autocast_for("off", cpu), contextlib.nullcontext)
    with pytest.raises(ValueError, match="auto, bf16 or off"):
        t.autocast_for("fp8", cpu)
    monkeypatch.setattr(t, "native_bf16", lambda device: False)
    assert t.amp_name(t.autocast_for("auto", cpu)) == "off"
    with pytest.raises(ValueError, match="--amp bf16: cpu has no native bfloat16"):
        t.autocast_for("bf16", cpu)
    monkeypatch.setattr(t, "native_bf16", lambda device: True)
    amp = t.autocast_for("auto", cpu)
    assert t.amp_name(amp) == "bf16" and amp.fast_dtype == torch.bfloat16
    summary = train(TrainOptions(out=str(tmp_path / "m"), vocab_size=300, hidden_size=32,
                                 layers=1, heads=2, kv_heads=1, intermediate_size=64,
                                 seq_len=64, batch_size=2, steps=2, eval_every=2, eval_rows=2,
                                 max_files=12, warmup=1, packages=False, log_every=0,
                                 amp="bf16"))
    assert summary["steps_done"] == 2 and 0 < summary["validation_loss"] < 20
