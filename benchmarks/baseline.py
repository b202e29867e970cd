"""The replay baseline: a markdown table of the main metrics on the sample traces and
on retype traces of the held-out standard-library files (bundled model, defaults).

    python benchmarks/baseline.py [--model PATH] [--max-functions 4]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_traces import describe, held_out_traces, sample_traces  # noqa: E402

from inkling.completion.engine import Engine  # noqa: E402
from inkling.completion.options import InklingOptions  # noqa: E402
from inkling.evaluation.replay import Replayer  # noqa: E402
from inkling.evaluation.replay_result import summarise  # noqa: E402
from inkling.evaluation.syntax_check import SyntaxChecker  # noqa: E402


def row(name: str, s: dict) -> str:
    return (f"| {name} | {s['completions']} | {100 * s['exact_line']:.1f}% | "
            f"{s['edit_similarity']:.3f} | {100 * s['accepted_chars']['fraction']:.1f}% | "
            f"{s['latency_ms']['p50']:.0f} / {s['latency_ms']['p95']:.0f} | "
            f"{s['prefill_tokens']['per_completion']:.0f} | {s['sync_ok']} |")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="")
    ap.add_argument("--max-functions", type=int, default=4)
    args = ap.parse_args()
    options = InklingOptions().merged({"model": {"path": args.model}})
    runtime = Engine(options).load_model()
    replayer = Replayer(options, runtime, SyntaxChecker())
    sets = {"sample traces": sample_traces(),
            "held-out retype traces": held_out_traces(0, args.max_functions)}
    print(f"model {runtime.path.name} on {runtime.device}; options: defaults "
          f"(cache {options.cache.mode}, draft {options.completion.draft}, decoder "
          f"{options.completion.decoder})\n")
    print("| traces | completions | exact_line | edit_similarity | accepted_chars | "
          "latency p50 / p95 (ms) | prefill tokens per completion | sync_ok |")
    print("|---|---|---|---|---|---|---|---|")
    for name, traces in sets.items():
        if traces:
            print(row(f"{name} ({describe(traces)})", summarise([replayer.replay(t)
                                                                 for t in traces])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
