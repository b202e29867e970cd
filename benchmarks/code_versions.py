"""Latency of two checkouts of inkling, interleaved on one machine: the same replay run by
each in turn, several rounds, so that the machine's load falls on both alike.

    python benchmarks/code_versions.py BEFORE AFTER [--rounds 5] [TRACE ...]

BEFORE and AFTER are checkouts (git worktrees) of this repository; each is imported in a
process of its own (PYTHONPATH pointing at a folder that names the checkout ``inkling``), with
this venv's Python and packages. The traces default to the reporting set
(benchmarks/traces/reporting), replayed at the defaults. Prints each run's completion latency
(p50, p95, ms) and, at the end, the median of the rounds and AFTER/BEFORE; exits 0.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _command(checkout: Path) -> list[str]:
    """The replay command of ``checkout``: its command line's module (cli/main.py, or
    lsp/cli.py before the restructuring)."""
    module = "inkling.cli.main" if (checkout / "cli" / "main.py").is_file() else "inkling.lsp.cli"
    return [sys.executable, "-m", module, "replay"]


def _env(checkout: Path, scratch: Path) -> dict:
    """The environment that imports ``checkout`` as inkling."""
    link_root = scratch / "path"
    link_root.mkdir(parents=True, exist_ok=True)
    if not (link_root / "inkling").exists():
        (link_root / "inkling").symlink_to(checkout.resolve())
    return {**os.environ, "PYTHONPATH": str(link_root)}


def _build(checkout: Path, scratch: Path) -> None:
    """The checkout's native forward, built before the first timed run."""
    command = _command(checkout)[:-1] + ["build-native"]
    subprocess.run(command, check=True, env=_env(checkout, scratch), cwd=checkout,
                   stdout=subprocess.DEVNULL)


def _run(checkout: Path, traces: list[str], scratch: Path) -> dict:
    out = scratch / "replay.json"
    env = _env(checkout, scratch)
    subprocess.run(_command(checkout) + traces + ["--json", str(out)], check=True, env=env,
                   cwd=checkout, stdout=subprocess.DEVNULL)
    report = json.loads(out.read_text(encoding="utf-8"))
    return {"p50": report["latency_ms"]["p50"], "p95": report["latency_ms"]["p95"],
            "exact_line": report.get("exact_line"), "completions": report["completions"]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("before", type=Path)
    ap.add_argument("after", type=Path)
    ap.add_argument("traces", nargs="*")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    traces = [str(Path(t).resolve()) for t in args.traces] or \
        sorted(str(p) for p in (HERE / "traces" / "reporting").glob("*.jsonl"))
    runs: dict[str, list[dict]] = {"before": [], "after": []}
    with tempfile.TemporaryDirectory() as tmp:
        for which in runs:
            _build(getattr(args, which), Path(tmp) / which)
        for r in range(args.rounds):
            order = ("before", "after") if r % 2 == 0 else ("after", "before")
            for which in order:
                res = _run(getattr(args, which), traces, Path(tmp) / which)
                runs[which].append(res)
                print(f"round {r + 1} {which:6}  p50 {res['p50']:7.1f}  p95 {res['p95']:7.1f}  "
                      f"exact_line {res['exact_line']}  completions {res['completions']}",
                      flush=True)
    med = {w: {k: statistics.median(x[k] for x in runs[w]) for k in ("p50", "p95")}
           for w in runs}
    for w in ("before", "after"):
        print(f"median {w:6}  p50 {med[w]['p50']:7.1f}  p95 {med[w]['p95']:7.1f}")
    print(f"after/before  p50 x{med['after']['p50'] / med['before']['p50']:.3f}  "
          f"p95 x{med['after']['p95'] / med['before']['p95']:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
