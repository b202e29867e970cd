"""The tuning set and the reporting set (evaluation/eval_sets.py): pinned, apart from each other
and from the training packages; the reporting set's committed traces are what
scripts/make_sets.py builds from the pinned wheels, byte for byte; and
`inkling evaluate --held-out reporting` measures on the set's modules."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from inkling.evaluation import packages
from inkling.evaluation.eval_sets import REPORTING, SETS, TUNING, held_out_packages

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts"))

import make_sets  # noqa: E402


@pytest.fixture(scope="module")
def reporting_wheels():
    """Each reporting package's wheel, from the wheel cache or downloaded into it; the
    tests that read them skip, saying why, where neither can be had."""
    try:
        return [packages.ensure_wheel(p.name, p.version) for p in REPORTING.packages]
    except (subprocess.CalledProcessError, FileNotFoundError, OSError) as exc:
        pytest.skip(f"a reporting wheel is neither cached in {packages.wheel_cache()} nor "
                    f"downloadable: {exc}")


def test_the_sets_are_pinned_apart_from_each_other_and_from_training():
    trained = {packages._norm(n) for n, _ in packages.PACKAGES}
    tuning = {packages._norm(p.name) for p in TUNING.packages}
    reporting = {packages._norm(p.name) for p in REPORTING.packages}
    assert tuning == {"toolz"} and TUNING.stdlib and not REPORTING.stdlib
    assert 3 <= len(reporting) <= 5 and not reporting & tuning
    assert not (reporting | tuning) & trained
    for p in held_out_packages():
        assert p.version[0].isdigit() and p.modules and set(p.traced) <= set(p.modules)
        assert all(m.split("/")[0] in p.top_level for m in p.modules), p.pin
    assert set(SETS) == {"tuning", "reporting"}


def test_the_committed_reporting_traces_are_rebuilt_byte_for_byte(reporting_wheels, tmp_path):
    committed = sorted((REPO / "benchmarks" / "traces" / "reporting").glob("*.jsonl"))
    assert committed, "benchmarks/traces/reporting holds no traces"
    assert sum(p.stat().st_size for p in committed) < 2_000_000
    rebuilt = make_sets.write_set("reporting", tmp_path)
    assert [p.name for p in rebuilt] == [p.name for p in committed]
    for new, old in zip(rebuilt, committed):
        assert new.read_bytes() == old.read_bytes(), f"{old.name} differs when rebuilt"


def test_a_stale_trace_is_removed_from_the_set_folder(reporting_wheels, tmp_path):
    stale = tmp_path / "reporting" / "retype-gone.jsonl"
    stale.parent.mkdir()
    stale.write_text("{}\n")
    make_sets.write_set("reporting", tmp_path)
    assert not stale.exists()


def test_evaluate_held_out_reporting_measures_the_pinned_modules(reporting_wheels,
                                                                 tiny_model_dir, tmp_path):
    """The real command, as a subprocess: one line a module, each module of the set."""
    out = tmp_path / "eval.json"
    proc = subprocess.run([sys.executable, "-m", "inkling.cli.main", "evaluate", "--held-out",
                           "reporting", "--fim-order", "spm", "--lines-per-file", "1",
                           "--decoder", "greedy", "--model", str(tiny_model_dir),
                           "--device", "cpu", "--json", str(out)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    [result] = json.loads(out.read_text())
    modules = [m for p in REPORTING.packages for m in p.modules]
    assert result["held_out"] == "reporting" and result["lines"] == len(modules)
    assert list(result["per_file"]) == modules
    assert "next-line exact match (reporting, spm)" in proc.stdout


def test_the_tuning_set_is_the_held_out_stdlib_files_and_toolz():
    from inkling.evaluation.held_out import held_out_files
    try:
        tuning = held_out_files("tuning")
    except (subprocess.CalledProcessError, OSError) as exc:
        pytest.skip(f"toolz 1.0.0's wheel is neither cached nor downloadable: {exc}")
    both = held_out_files("stdlib") + held_out_files("package")
    assert [(f.relpath, f.text) for f in tuning] == [(f.relpath, f.text) for f in both]
    with pytest.raises(ValueError, match="reporting"):
        held_out_files("everything")
