"""The GPU suite end to end on the CPU (``--smoke``: small shapes, a few iterations, a
couple of completions), so that a GPU never finds a broken script: every section runs
without an error, its figures are written (text appended, JSON beside it), and what it
checks holds on the CPU too (the forwards within their tolerance, the recorded CPU drafts
reproduced)."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SUITE = REPO / "benchmarks" / "gpu_suite.py"
SECTIONS = ("bandwidth", "forwards", "decoders", "steps", "trees", "pie", "replay")


@pytest.mark.slow
def test_the_suite_runs_end_to_end_on_the_cpu(tmp_path):
    for _ in range(2):                                     # the text is appended, run by run
        run = subprocess.run([sys.executable, str(SUITE), "--smoke", "--device", "cpu",
                              "--results", str(tmp_path)], capture_output=True, text=True,
                             timeout=900, cwd=REPO)
        assert run.returncode == 0, run.stderr[-3000:]
    text = (tmp_path / "gpu_suite_cpu-smoke.txt").read_text()
    assert text.count("\n## ") == 2 and '"commit"' in text and '"device": "cpu"' in text
    results = json.loads((tmp_path / "gpu_suite_cpu-smoke.json").read_text())
    for name in SECTIONS:
        out = results[name]["result"]
        assert isinstance(out, dict) and "error" not in out, (name, out)
        assert f"\n{name} (" in text
    forwards = results["forwards"]["result"]
    checked = [v for model in forwards.values() if isinstance(model, dict)
               for v in (model.get("compact"), model.get("captured")) if isinstance(v, dict)]
    assert len(checked) >= 8 and all(v["ok"] for v in checked), forwards
    assert "starcoder2" in forwards["starcoder2-tiny-float32"]["compact"]    # says why not
    greedy = results["decoders"]["result"]["greedy:1"]
    assert greedy["completions"] == greedy["all_drafts_same"] == 2, \
        "the recorded CPU drafts are stale: python benchmarks/gpu_decoders.py --record"
    steps = results["steps"]["result"]["bundled-float32"]
    assert steps["bound_ms"] > 0 and steps["captured@256"]["ms"] > 0
    assert results["pie"]["result"]["pie_ms"] > 0
    replays = results["replay"]["result"]
    assert all(r["rc"] == 0 for r in replays.values()), replays
    assert set(next(iter(replays.values()))) >= {"draft=none", "draft=suffix"}


def test_a_failing_section_is_recorded_and_the_suite_goes_on(tmp_path, monkeypatch):
    sys.path.insert(0, str(SUITE.parent))
    import gpu_suite

    def broken(suite):
        raise RuntimeError("planted")
    monkeypatch.setitem(gpu_suite.SECTIONS, "bandwidth", broken)
    assert gpu_suite.main(["--smoke", "--device", "cpu", "--results", str(tmp_path),
                           "--sections", "bandwidth,steps"]) == 1
    results = json.loads((tmp_path / "gpu_suite_cpu-smoke.json").read_text())
    assert results["bandwidth"]["result"]["error"] == "RuntimeError: planted"
    assert results["steps"]["result"]["bundled-float32"]["bound_ms"] > 0    # measured itself
    assert "bandwidth (" in (tmp_path / "gpu_suite_cpu-smoke.txt").read_text()


def test_a_spent_budget_skips_what_is_left(tmp_path):
    sys.path.insert(0, str(SUITE.parent))
    import gpu_suite
    assert gpu_suite.main(["--smoke", "--device", "cpu", "--results", str(tmp_path),
                           "--sections", "bandwidth,forwards", "--limit", "0"]) == 0
    results = json.loads((tmp_path / "gpu_suite_cpu-smoke.json").read_text())
    assert "skipped: less than half its budget" in results["forwards"]["result"]
