"""Work that must not grow with the file: the prompt of a completion in the middle of a
5,000-line file, and the analysis of a one-megabyte Python file (open, and the monitor's
state at its end), timed.

    python benchmarks/large_files.py [--model PATH] [--runs 5]

The unit tests check the behaviour behind these figures without timing it
(tests/completion/test_prompt.py: only windows of about the budget are tokenized;
tests/analysis/test_analysis_bad_input.py: no symbols are extracted from a file over
max_symbol_bytes); this prints the median and worst wall time of each.
"""
from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from inkling.analysis import AnalysisOptions, CodeAnalysis
from inkling.runtime.model_loader import load_runtime
from inkling.completion.prompt.builder import build_prompt
from inkling.models import BUNDLED_MODEL_DIR


def _timed(fn, runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return times


def prompt_in_a_long_file(model: Path, runs: int) -> list[float]:
    runtime = load_runtime(model, device="cpu", dtype="float32")
    lines = [f"    value_{i} = compute({i}, name='row {i}')\n" for i in range(5000)]
    text = "def big():\n" + "".join(lines)
    cursor = len(text) // 2
    return _timed(lambda: build_prompt(runtime, text[:cursor], text[cursor:], (300, 100),
                                       runtime.fim_order), runs)


def analysis_of_a_megabyte(runs: int) -> list[float]:
    body = "".join(f"def f{i}(a, b=1):\n    return a + b  # {'x' * 40}\n\n" for i in range(14_000))
    text = body + "\nclass K:\n    def g(self):\n        return self."
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "big.py").write_text(body)
        uri = (root / "big.py").as_uri()

        def once():
            a = CodeAnalysis(AnalysisOptions(background=False, watch=False))
            a.set_workspace_folders([root])
            a.open(uri, text, "python")
            a.monitor(uri, len(text), None)
        return _timed(once, runs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=str(BUNDLED_MODEL_DIR))
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    for name, times in (("prompt, 5,000-line file", prompt_in_a_long_file(Path(args.model),
                                                                           args.runs)),
                        ("analysis, 1 MB file", analysis_of_a_megabyte(args.runs))):
        print(f"{name:<26} median {statistics.median(times):8.1f} ms   "
              f"worst {max(times):8.1f} ms   ({len(times)} runs)")


if __name__ == "__main__":
    main()
