"""On the bundled model, pie stays close to full after edits and naive drifts far more."""
import statistics
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))


@pytest.mark.slow
def test_pie_stays_close_to_full_and_naive_drifts(bundled_model_dir, capsys):
    from cache_kl import measure

    from inkling.runtime.model_loader import load_runtime
    runtime = load_runtime(bundled_model_dir, device="cpu", dtype="float32")
    res = measure(runtime, 24, seed=1)
    pie, naive = statistics.mean(res["pie"]), statistics.mean(res["naive"])
    with capsys.disabled():
        print(f"\nmean KL(full || pie) = {pie:.4f}, mean KL(full || naive) = {naive:.4f}")
    assert pie < 0.25
    assert naive > 3 * pie
