"""The command line: clear one-line errors on bad input, and a real completion.

The errors are checked in-process through `main` (what `python -m inkling.cli.main` runs);
the completions, which load a model, run the command as a subprocess (slow)."""
import subprocess
import sys

import pytest

from inkling.cli.main import main


class Run:
    """A finished command: its exit status, standard output and standard error."""

    def __init__(self, returncode: int, stdout: str, stderr: str):
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


@pytest.fixture
def run_cli(capsys):
    """`inkling ARGS...` in this process."""
    def run(*args) -> Run:
        capsys.readouterr()
        try:
            code = main(list(args))
        except SystemExit as exc:                         # argparse: --help, bad flags
            code = exc.code or 0
        out = capsys.readouterr()
        return Run(code, out.out, out.err)
    return run


def run_process(*args, cwd=None):
    """`python -m inkling.cli.main ARGS...` as a subprocess."""
    return subprocess.run([sys.executable, "-m", "inkling.cli.main", *args], capture_output=True,
                          text=True, cwd=cwd, timeout=300)


def assert_one_line_error(proc, *needles):
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, proc.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]


def test_help_lists_every_command(run_cli):
    out = run_cli("--help").stdout
    for command in ("complete", "train"):
        assert command in out


def test_help_imports_no_heavy_library():
    """`inkling --help` stays fast: torch, transformers, Ray, matplotlib and pygls are
    imported by the commands that use them, not by the parser."""
    code = ("import sys\n"
            "from inkling.cli.main import _parser\n"
            "_parser().format_help()\n"
            "print(' '.join(m for m in ('torch', 'transformers', 'ray', 'matplotlib', "
            "'pygls') if m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "", f"inkling --help imports {out.stdout.strip()}"


def test_version_is_the_installed_distributions(run_cli):
    from importlib.metadata import version
    assert run_cli("--version").stdout.strip() == f"inkling {version('inkling')}"


@pytest.mark.parametrize("flags, needle", [
    (("--device", "gpu"), "must be auto, cpu, cuda or cuda:N"),
    (("--device", "cuda:x"), "got 'cuda:x'"),
    (("--dtype", "f16"), "invalid choice: 'f16'"),
])
def test_device_and_dtype_are_checked_by_the_parser(run_cli, tmp_path, flags, needle):
    r = run_cli("complete", str(tmp_path / "a.py"), "--line", "1", "--col", "1", *flags)
    assert r.returncode == 2 and needle in r.stderr


def test_every_option_of_every_command_has_help(run_cli):
    from inkling.cli.main import _parser
    import argparse
    commands = [_parser()]
    while commands:
        parser = commands.pop()
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                commands += action.choices.values()
            elif action.option_strings and action.dest != "help":
                assert action.help, f"{parser.prog} {action.option_strings[0]} has no help"


def test_missing_file(run_cli, tmp_path):
    assert_one_line_error(run_cli("complete", str(tmp_path / "gone.py"), "--line", "1", "--col", "1"),
                          "gone.py", "no such file")


def test_position_out_of_range(run_cli, tmp_path):
    f = tmp_path / "a.py"
    f.write_text("x = 1\ny = 2\n")
    assert_one_line_error(run_cli("complete", str(f), "--line", "9", "--col", "1"),
                          "line 9 is out of range", "3 lines")
    assert_one_line_error(run_cli("complete", str(f), "--line", "1", "--col", "40"),
                          "column 40 is out of range")
    assert_one_line_error(run_cli("complete", str(f), "--line", "0", "--col", "1"),
                          "line 0 is out of range")


def test_binary_and_non_utf8_files(run_cli, tmp_path):
    b = tmp_path / "blob.bin"
    b.write_bytes(b"\x7fELF\x00\x01\x02")
    assert_one_line_error(run_cli("complete", str(b), "--line", "1", "--col", "1"), "binary")
    latin = tmp_path / "latin.py"
    latin.write_bytes("caf\xe9 = 1\n".encode("latin-1"))
    assert_one_line_error(run_cli("complete", str(latin), "--line", "1", "--col", "1"),
                          "not UTF-8")


def test_directory_is_not_a_file(run_cli, tmp_path):
    assert_one_line_error(run_cli("complete", str(tmp_path), "--line", "1", "--col", "1"),
                          "not a regular file")


def test_missing_model_path_exits_2(run_cli, tmp_path):
    f = tmp_path / "a.py"
    f.write_text("x = 1\n")
    proc = run_cli("complete", str(f), "--line", "1", "--col", "5", "--model", str(tmp_path / "m"))
    assert proc.returncode == 2
    assert_one_line_error(proc, "model path", "does not exist")


def test_model_without_rope_exits_2(run_cli, tmp_path):
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text('{"model_type": "gpt2"}')
    f = tmp_path / "a.py"
    f.write_text("x = 1\n")
    proc = run_cli("complete", str(f), "--line", "1", "--col", "5", "--model", str(tmp_path / "m"))
    assert proc.returncode == 2
    assert_one_line_error(proc, "no rotary position embeddings")


@pytest.mark.slow
def test_the_command_exits_with_the_status_and_one_line_of_main(tmp_path):
    f = tmp_path / "a.py"
    f.write_text("x = 1\n")
    proc = run_process("complete", str(f), "--line", "1", "--col", "5", "--model",
                       str(tmp_path / "m"))
    assert proc.returncode == 2
    assert_one_line_error(proc, "model path", "does not exist")


@pytest.mark.slow
def test_complete_with_tiny_model_json(tiny_model_dir, tmp_path):
    import json
    f = tmp_path / "a.py"
    f.write_text("def f(a):\n    return \n")
    proc = run_process("complete", str(f), "--line", "2", "--col", "12", "--model",
                       str(tiny_model_dir), "--json", "--max-new-tokens", "8",
                       "--drafts", "1")                     # default: 3 (invoked)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert len(out["drafts"]) == 1 and out["prefill_tokens"] > 0


@pytest.mark.slow
def test_bundled_model_completes_the_sample(bundled_model_dir, shared_dir):
    store = shared_dir / "samples" / "inventory" / "store.py"
    proc = run_process("complete", str(store), "--line", "24", "--col", "20")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip(), "the bundled model suggested nothing after `return `"


def test_evaluate_refuses_a_card_of_several_drafts_and_a_count_under_one(run_cli):
    r = run_cli("evaluate", "--drafts", "3", "--write-card")
    assert r.returncode == 2 and "--write-card with --drafts 3" in r.stderr
    r = run_cli("evaluate", "--drafts", "0")
    assert r.returncode == 2 and "--drafts 0: at least 1" in r.stderr


def test_evaluation_of_several_drafts_counts_the_first_and_any(tiny_model_dir):
    from inkling.completion.engine import Engine
    from inkling.completion.options import InklingOptions
    from inkling.evaluation.held_out import evaluate_next_line
    engine = Engine(InklingOptions().merged({"model": {"path": str(tiny_model_dir),
                                                       "device": "cpu"},
                                             "completion": {"max_new_tokens": 4}}))
    one = evaluate_next_line(str(tiny_model_dir), "spm", 3, 0, engine, "stdlib")
    three = evaluate_next_line(str(tiny_model_dir), "spm", 3, 0, engine, "stdlib", drafts=3)
    assert one.drafts == 1 and one.exact_any == one.exact
    assert three.drafts == 3 and three.lines == one.lines
    assert three.exact <= three.exact_any <= three.lines
    s = three.summary()
    assert s["drafts"] == 3 and s["exact_any"] == three.exact_any
    assert s["exact_any_match"] == round(three.exact_any / three.lines, 4)


def _complete_json(path, *flags):
    """`inkling complete --json` at the end of a one-line file; (its JSON, its stderr lines)."""
    import json
    proc = run_process("complete", str(path), "--line", "2", "--col", "12", "--json",
                       "--drafts", "1", "--max-new-tokens", "4", "--device", "cpu", *flags)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout), proc.stderr.splitlines()


def _stored(folder):
    """(parameters, bytes) of the folder's safetensors files, read by the safetensors package."""
    import math
    from safetensors import safe_open
    params = nbytes = 0
    for f in sorted(folder.glob("*.safetensors")):
        with safe_open(str(f), framework="np") as h:
            for name in h.keys():
                s = h.get_slice(name)
                params += math.prod(s.get_shape())
                nbytes += math.prod(s.get_shape()) * {"F16": 2, "BF16": 2, "F32": 4}[s.get_dtype()]
    return params, nbytes


@pytest.mark.slow
def test_complete_json_says_what_the_bundled_model_load_chose(bundled_model_dir, tmp_path):
    """The `model` object has every field, from the folder as stored; `inkling complete` never
    times drafting's forwards, so a model it has no timing for says drafting is not measured."""
    import dataclasses
    import json
    import shutil
    from tokenizers import Tokenizer
    from inkling.runtime.chunked_encoder import ChunkedEncoder
    from inkling.runtime.model_description import ModelDescription
    f = tmp_path / "a.py"
    f.write_text("def f(a):\n    return \n")
    out, err = _complete_json(f)
    model = out["model"]
    assert list(model) == [fld.name for fld in dataclasses.fields(ModelDescription)]
    cfg = json.loads((bundled_model_dir / "config.json").read_text())
    meta = json.loads((bundled_model_dir / "inkling.json").read_text())
    rule = ChunkedEncoder.for_tokenizer(Tokenizer.from_file(
        str(bundled_model_dir / "tokenizer.json"))).rule
    params, nbytes = _stored(bundled_model_dir)
    assert model["path"] == str(bundled_model_dir.resolve())
    assert model["family"] == cfg["model_type"]
    assert (model["parameters"], model["checkpoint_bytes"], model["weights"]) == \
        (params, nbytes, "float16")
    assert model["resident_bytes"] >= 4 * params            # float32 on the CPU
    assert (model["device"], model["dtype"]) == ("cpu", "float32")
    assert (model["fim"], model["fim_order"], model["encoder_rule"]) == \
        (meta["fim_family"], meta["fim_order"], rule)
    assert model["forward"] in ("native", "compact") and model["forward_reason"]
    assert model["drafting_state"] in ("cached", "not measured yet") and model["drafting_reason"]
    said = [line for line in err if line.startswith("inkling: model ")]
    assert len(said) == 1, err
    for part in (f"{model['forward']} forward", "float16 weights", "float32 on cpu",
                 f"drafting {model['drafting']} ({model['drafting_state']}: "):
        assert part in said[0], (part, said[0])
    copy = shutil.copytree(bundled_model_dir, tmp_path / "copy")   # no timing kept for it
    fresh, _ = _complete_json(f, "--model", str(copy))
    assert fresh["model"]["parameters"] == params
    assert (fresh["model"]["drafting"], fresh["model"]["drafting_state"]) == \
        ("none", "not measured yet")
