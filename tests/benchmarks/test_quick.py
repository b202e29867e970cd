"""Each maintained benchmark's ``--quick --json`` form: it runs on tiny inputs (one short
trace, a few completions, one round) and writes a flat JSON object of numbers, so that the
suite never finds a broken script."""
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BENCHMARKS = REPO / "benchmarks"

# script -> its arguments before --quick --json (what benchmarks/suite.py passes)
QUICK = {
    "cache_kl": [], "cache_modes": [], "card": [], "cpu_layout": [], "decoders": [],
    "defaults": [], "drafting": [], "int8": [], "lossless": [], "lsp_overhead": [],
    "monitor_pays": [], "peer_llamacpp": [], "peer_step": [], "thread_choice": [],
    "recorded_outputs": ["check", "{tmp}/recorded.json"], "code_versions": ["HEAD"],
    "load_memory": [], "native_step": [], "monitor_vocab": [], "soak": [], "peer_sizes": [],
    "zoo_table": [], "gguf_agreement": [],
    "gpu_suite": ["--device", "cpu", "--results", "{tmp}"],
}


@pytest.mark.slow
@pytest.mark.parametrize("script", sorted(QUICK))
def test_the_quick_form_writes_a_json_object_of_numbers(script, tmp_path):
    args = [a.format(tmp=tmp_path) for a in QUICK[script]]
    out = tmp_path / "figures.json"
    run = subprocess.run([sys.executable, str(BENCHMARKS / f"{script}.py"), *args, "--quick",
                          "--json", str(out)], capture_output=True, text=True, timeout=300,
                         cwd=tmp_path)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-3000:]
    figures = json.loads(out.read_text())
    assert isinstance(figures, dict) and figures
    for name, value in figures.items():
        assert isinstance(name, str) and isinstance(value, (int, float)), (name, value)
        assert not isinstance(value, bool) and math.isfinite(value), (name, value)


def test_every_benchmark_script_has_a_quick_form():
    """The scripts beside common.py are the maintained benchmarks and their helpers."""
    helpers = {"common", "gpu_decoders", "gpu_models", "gpu_speed", "store", "suite", "tables"}
    scripts = {p.stem for p in BENCHMARKS.glob("*.py")} - helpers
    assert scripts == set(QUICK)
    for name in scripts:
        text = (BENCHMARKS / f"{name}.py").read_text(encoding="utf-8")
        assert "--quick" in text or "parser(__doc__" in text, name
