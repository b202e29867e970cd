"""Repository context in the prompt (issue 26), measured on a package the model never saw.

    python benchmarks/repo_context.py [--max-functions N] [--seed S] [--out DIR]
                                      [--compare off,both] [--model PATH]

toolz 1.0.0 (pure Python, held out from the bundled model's training) is fetched with
``pip download --no-deps`` and unpacked; ``inkling trace retype --root`` makes one retype
trace per file of the package that has function bodies (tests included), every other file
of the package a ``file`` event in it, with paths such as ``toolz/itertoolz.py`` so that
absolute imports resolve. Then one ``inkling replay TRACES --compare
completion.context=off,both --json OUT --report OUT.html`` replays them, interleaved trace
by trace, and this script prints, per setting: exact_line, edit_similarity, prefill tokens
per completion (all, and while typing: every completion but each trace's first), first-token
p50 (all, and while typing) and context tokens per completion.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

TOOLZ = "toolz==1.0.0"
INKLING = [sys.executable, "-m", "inkling.cli.main"]


def fetch_toolz(tmp: Path) -> Path:
    """The unpacked toolz wheel's folder (holding ``toolz/``)."""
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", TOOLZ,
                    "-d", str(tmp)], check=True, timeout=300)
    wheel = next(tmp.glob("toolz-*.whl"), None)
    if wheel is None:
        raise SystemExit(f"pip download {TOOLZ} gave no wheel in {tmp}")
    src = tmp / "src"
    with zipfile.ZipFile(wheel) as z:
        z.extractall(src, [n for n in z.namelist() if n.startswith("toolz/")])
    return src


def make_traces(src: Path, out: Path, max_functions: int, seed: int) -> list[Path]:
    files = sorted(str(p) for p in (src / "toolz").rglob("*.py"))
    cmd = INKLING + ["trace", "retype", "--root", str(src), "--out", str(out),
                     "--max-functions", str(max_functions), "--seed", str(seed), *files]
    print(f"$ inkling trace retype --root {src} --out {out} --max-functions {max_functions} "
          f"--seed {seed} {src}/toolz/**/*.py", flush=True)
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return sorted(out.glob("*.jsonl"))


def replay(traces: list[Path], values: str, json_out: Path, report: Path,
           model: str | None) -> dict:
    cmd = INKLING + ["replay", *map(str, traces), "--compare", f"completion.context={values}",
                     "--json", str(json_out), "--report", str(report)]
    if model:
        cmd += ["--model", model]
    print("$ inkling replay TRACES --compare", f"completion.context={values}",
          f"--json {json_out} --report {report}", flush=True)
    done = subprocess.run(cmd)
    if done.returncode not in (0, 1):
        raise SystemExit(f"inkling replay exited with {done.returncode}")
    return json.loads(json_out.read_text())


def table(report: dict) -> str:
    rows = ["| context | completions | exact_line | edit_similarity | prefill / completion | "
            "prefill / completion, typing | first token p50 (ms) | first token p50, typing | "
            "context tokens / completion |", "|" + "---|" * 9]
    for run in report["runs"]:
        ft, ftt = run["first_token_ms"] or {}, run["first_token_ms_typing"] or {}
        rows.append(f"| {run['settings']['completion.context']} | {run['completions']} | "
                    f"{run['exact_line']:.4f} | {run['edit_similarity']:.4f} | "
                    f"{run['prefill_tokens']['per_completion']:.1f} | "
                    f"{run['prefill_tokens_typing']:.1f} | {ft.get('p50', 0):.1f} | "
                    f"{ftt.get('p50', 0):.1f} | {run['context_tokens']['per_completion']:.1f} |")
    base, other = report["runs"][0], report["runs"][-1]

    def x(key: str, field: str) -> str:
        return f"x{other[key][field] / base[key][field]:.2f}"
    typing = other["prefill_tokens_typing"] / base["prefill_tokens_typing"]
    ratio = (f"\n{other['settings']['completion.context']} / "
             f"{base['settings']['completion.context']}: prefill "
             f"{x('prefill_tokens', 'per_completion')} (typing x{typing:.2f}), first token p50 "
             f"{x('first_token_ms', 'p50')} (typing {x('first_token_ms_typing', 'p50')})")
    return "\n".join(rows) + ratio


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--max-functions", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--compare", default="off,both", metavar="V1,V2")
    ap.add_argument("--model", help="a model folder (default: the bundled model)")
    ap.add_argument("--out", type=Path, help="keep traces, JSON and report here (default: a "
                    "temporary folder; with the bundled model the JSON is copied to "
                    "benchmarks/results/)")
    args = ap.parse_args()
    tmp = tempfile.TemporaryDirectory(prefix="inkling-repo-context-")
    out = args.out or Path(tmp.name)
    out.mkdir(parents=True, exist_ok=True)
    src = fetch_toolz(out)
    traces = make_traces(src, out / "traces", args.max_functions, args.seed)
    print(f"{len(traces)} traces of toolz 1.0.0", flush=True)
    report = replay(traces, args.compare, out / "repo_context.json", out / "repo_context.html",
                    args.model)
    results = Path(__file__).resolve().parent / "results"
    if results.is_dir() and not args.model:      # the results are the bundled model's
        (results / "repo_context.json").write_text(json.dumps(report, indent=2) + "\n")
    print(table(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
