"""A broken model folder is one line naming the file (and the key): a truncated safetensors
file, a config.json that is not an object, a size that is not a positive number. The loader
says it; `inkling complete`, `inkling replay` and `inkling serve` each show that one line."""
import json
import shutil
import subprocess
import sys

import pytest

from lsp_wire import Wire

from inkling.runtime.errors import ModelError
from inkling.runtime.model_loader import check_model_dir, load_runtime


def _copy(tiny_model_dir, tmp_path):
    folder = tmp_path / "model"
    shutil.copytree(tiny_model_dir, folder)
    return folder


def _truncate(folder, keep: float) -> str:
    weights = folder / "model.safetensors"
    data = weights.read_bytes()
    weights.write_bytes(data[:int(len(data) * keep)] if keep else data[:40])
    return str(weights)


def _write_config(folder, value) -> str:
    (folder / "config.json").write_text(json.dumps(value))
    return str(folder / "config.json")


def _set_config(folder, **fields) -> str:
    return _write_config(folder, {**json.loads((folder / "config.json").read_text()), **fields})


@pytest.mark.parametrize("keep", [0, 0.5, 0.999])      # the header cut, the data cut short
def test_a_truncated_weights_file_is_named(tiny_model_dir, tmp_path, keep):
    weights = _truncate(_copy(tiny_model_dir, tmp_path), keep)
    with pytest.raises(ModelError) as err:
        check_model_dir(tmp_path / "model")
    assert str(err.value).startswith(f"model file {weights} cannot be read: ")
    assert str(err.value).endswith("(truncated?)") and "\n" not in str(err.value)


@pytest.mark.parametrize("value", [[1, 2], "llama", 7, None])
def test_a_config_that_is_not_an_object_is_named(tiny_model_dir, tmp_path, value):
    folder = _copy(tiny_model_dir, tmp_path)
    _write_config(folder, value)
    with pytest.raises(ModelError, match=r"config\.json must be a JSON object"):
        check_model_dir(folder)


@pytest.mark.parametrize("key, value", [
    ("hidden_size", "big"), ("num_hidden_layers", 0), ("num_attention_heads", 2.5),
    ("vocab_size", -1), ("intermediate_size", True), ("max_position_embeddings", "2k"),
    ("num_key_value_heads", [2]), ("rope_theta", "ten thousand"), ("rms_norm_eps", 0)])
def test_a_size_that_is_not_positive_names_config_json_and_the_key(
        tiny_model_dir, tmp_path, key, value):
    cfg = _set_config(_copy(tiny_model_dir, tmp_path), **{key: value})
    with pytest.raises(ModelError) as err:
        check_model_dir(tmp_path / "model")
    assert str(err.value).startswith(f"model config {cfg}: {key} must be a positive")
    assert repr(value) in str(err.value)


def test_a_field_transformers_refuses_names_config_json_and_the_key(tiny_model_dir, tmp_path):
    cfg = _set_config(_copy(tiny_model_dir, tmp_path), attention_dropout="much")
    with pytest.raises(ModelError) as err:
        load_runtime(tmp_path / "model", device="cpu", dtype="float32")
    assert str(err.value).startswith(f"model config {cfg}: ")
    assert "attention_dropout" in str(err.value) and "\n" not in str(err.value)


BROKEN = {   # how a folder is broken -> what the one line says
    "truncated": (lambda f: _truncate(f, 0.5), "cannot be read: incomplete metadata"),
    "config list": (lambda f: _write_config(f, [1, 2]), "must be a JSON object"),
    "hidden_size big": (lambda f: _set_config(f, hidden_size="big"),
                        "hidden_size must be a positive integer"),
}


@pytest.fixture(params=sorted(BROKEN))
def broken(request, tiny_model_dir, tmp_path):
    """(a broken copy of the tiny model, the file its one line names, what the line says)."""
    folder = _copy(tiny_model_dir, tmp_path)
    breaks, says = BROKEN[request.param]
    return folder, breaks(folder), says


def _run(*args):
    return subprocess.run([sys.executable, "-m", "inkling.cli.main", *args],
                          capture_output=True, text=True, timeout=300)


def _assert_one_line(proc, *needles):
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert len(lines) == 1, proc.stderr
    assert all(needle in lines[0] for needle in needles), lines[0]


@pytest.mark.slow
def test_complete_and_replay_say_the_one_line(broken, tmp_path):
    folder, culprit, says = broken
    source = tmp_path / "a.py"
    source.write_text("def f(a):\n    return \n")
    _assert_one_line(_run("complete", str(source), "--line", "2", "--col", "12", "--model",
                          str(folder), "--device", "cpu"), culprit, says)
    trace = tmp_path / "t.jsonl"
    trace.write_text("".join(json.dumps(e) + "\n" for e in (
        {"kind": "header", "version": 1, "name": "broken", "language": "python"},
        {"kind": "open", "path": "a.py", "text": "x = 1\n"},
        {"kind": "complete", "path": "a.py", "position": {"line": 0, "character": 5},
         "expected": "\n"})))
    _assert_one_line(_run("replay", str(trace), "--model", str(folder), "--device", "cpu"),
                     culprit, says)


@pytest.mark.slow
def test_serve_says_the_one_line_once_and_answers_no_internal_error(broken):
    folder, culprit, says = broken
    wire = Wire(folder)
    try:
        statuses = [n["params"] for n in wire.notifications if n["method"] == "inkling/status"]
        assert statuses[-1]["state"] == "error", statuses
        assert culprit in statuses[-1]["message"] and says in statuses[-1]["message"]
        wire.open("file:///ws/a.py", "x = 1\n")
        for _ in range(2):
            answer = wire.wait(wire.inline("file:///ws/a.py", 0, 5), 60)
            assert answer.get("error", {}).get("code") != -32603, answer
        assert [p for p in wire.popups() if culprit in p] == [wire.popups()[0]]
        assert len(wire.popups()) == 1, wire.popups()
        assert wire.tracebacks() == []
    finally:
        wire.kill()
