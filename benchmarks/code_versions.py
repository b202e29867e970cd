"""Completion latency of two versions of inkling, interleaved on one machine: the same replay
run by each in turn, several rounds, so that the machine's load falls on both alike. It backs
the check that a change which should not alter speed (a refactor) leaves the p50 within noise.

    python benchmarks/code_versions.py BEFORE [AFTER] [--rounds 3] [--traces T.jsonl ...]
                                       [--quick] [--json OUT]

BEFORE and AFTER are git commits (anything ``git rev-parse`` takes) or checkouts of this
repository; AFTER defaults to this checkout as it is, uncommitted changes included. A commit is
checked out into a temporary worktree. Each version runs in a process of its own, with this
environment's Python and packages and PYTHONPATH naming the version's folder ``inkling``, and
builds its native forward before the first timed run. The traces default to the reporting set
(benchmarks/traces/reporting), replayed at the defaults; ``--quick`` replays its shortest trace
once. Prints each run's completion latency (p50, p95, ms) and exact_line, then the median of
the rounds and AFTER / BEFORE."""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import parser, write_json  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
REPORTING = REPO / "benchmarks" / "traces" / "reporting"


def checkout(version: str, scratch: Path) -> Path:
    """The folder holding ``version``: a checkout as given, or a commit in a new worktree."""
    if Path(version).is_dir():
        return Path(version).resolve()
    commit = subprocess.run(["git", "rev-parse", "--verify", f"{version}^{{commit}}"], cwd=REPO,
                            capture_output=True, text=True)
    if commit.returncode:
        raise SystemExit(f"code_versions: {version!r} is neither a folder nor a commit")
    folder = scratch / f"tree-{commit.stdout.strip()[:12]}"
    if not folder.exists():
        subprocess.run(["git", "worktree", "add", "--detach", "--quiet", str(folder),
                        commit.stdout.strip()], cwd=REPO, check=True)
    shared = REPO.parent / "shared"
    if shared.is_dir() and not (scratch / "shared").exists():
        (scratch / "shared").symlink_to(shared)        # the sample traces, beside the checkout
    return folder


def environment(folder: Path, root: Path) -> dict:
    """The environment that imports ``folder`` as the package ``inkling`` (a link in ``root``)."""
    root.mkdir(parents=True, exist_ok=True)
    if not (root / "inkling").exists():
        (root / "inkling").symlink_to(folder)
    return {**os.environ, "PYTHONPATH": str(root)}


def cli(folder: Path) -> list[str]:
    """The version's command line module (``cli/main.py``, or ``lsp/cli.py`` in old trees)."""
    module = "inkling.cli.main" if (folder / "cli" / "main.py").is_file() else "inkling.lsp.cli"
    return [sys.executable, "-m", module]


def replay(folder: Path, env: dict, traces: list[str], out: Path) -> dict:
    """One replay of ``traces`` by the version in ``folder``: its latency and exact_line."""
    subprocess.run(cli(folder) + ["replay", *traces, "--json", str(out)], check=True, env=env,
                   cwd=folder, stdout=subprocess.DEVNULL)
    report = json.loads(out.read_text(encoding="utf-8"))
    return {"p50": report["latency_ms"]["p50"], "p95": report["latency_ms"]["p95"],
            "exact_line": report.get("exact_line"), "completions": report["completions"]}


def shortest(paths: list[str]) -> list[str]:
    """The trace with the fewest completions."""
    def completions(path: str) -> int:
        return Path(path).read_text(encoding="utf-8").count('"complete"')
    return [min(paths, key=completions)]


def main() -> int:
    ap = parser(__doc__, model=False)
    ap.add_argument("before", help="a commit or a checkout")
    ap.add_argument("after", nargs="?", default=str(REPO), help="default: this checkout")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--traces", nargs="*", default=[], help="default: the reporting set")
    args = ap.parse_args()
    traces = [str(Path(t).resolve()) for t in args.traces] or \
        sorted(str(p) for p in REPORTING.glob("*.jsonl"))
    rounds = 1 if args.quick else args.rounds
    if args.quick:
        traces = shortest(traces)
    runs: dict[str, list[dict]] = {"before": [], "after": []}
    with tempfile.TemporaryDirectory(prefix="inkling-code-versions-") as tmp:
        scratch = Path(tmp)
        folders = {"before": checkout(args.before, scratch), "after": checkout(args.after, scratch)}
        envs = {w: environment(f, scratch / f"path-{w}") for w, f in folders.items()}
        try:
            for which, folder in folders.items():
                subprocess.run(cli(folder) + ["build-native"], check=True, env=envs[which],
                               cwd=folder, stdout=subprocess.DEVNULL)
            for r in range(rounds):
                for which in ("before", "after") if r % 2 == 0 else ("after", "before"):
                    res = replay(folders[which], envs[which], traces, scratch / "replay.json")
                    runs[which].append(res)
                    print(f"round {r + 1} {which:6}  p50 {res['p50']:7.1f}  p95 {res['p95']:7.1f}"
                          f"  exact_line {res['exact_line']}  completions {res['completions']}",
                          flush=True)
        finally:
            for folder in folders.values():
                if folder.is_relative_to(scratch):
                    subprocess.run(["git", "worktree", "remove", "--force", str(folder)],
                                   cwd=REPO, capture_output=True)
    med = {w: {k: statistics.median(x[k] for x in runs[w]) for k in ("p50", "p95")}
           for w in runs}
    ratio = {k: med["after"][k] / med["before"][k] for k in ("p50", "p95")}
    print(f"median of {rounds} rounds: p50 {med['before']['p50']:.1f} -> "
          f"{med['after']['p50']:.1f} ms (x{ratio['p50']:.3f}), p95 {med['before']['p95']:.1f}"
          f" -> {med['after']['p95']:.1f} ms (x{ratio['p95']:.3f}); {len(traces)} traces")
    write_json(args.json, {"before": med["before"], "after": med["after"], "ratio": ratio,
                           "exact_line": {w: runs[w][-1]["exact_line"] for w in runs},
                           "rounds": rounds, "traces": len(traces)})
    return 0


if __name__ == "__main__":
    sys.exit(main())
