"""The benchmark suite: every maintained benchmark, one after another, each run kept in the
store (benchmarks/store.py) and the tables of docs/benchmarks.md regenerated from it.

    python benchmarks/suite.py [--quick | --long] [--only a,b] [--list]

Each benchmark runs as ``python benchmarks/<script>.py <args> --json <tmpfile>`` (``--quick``
adds ``--quick`` and takes the entry's quick arguments: fewer traces, runs and rounds, so the
whole of it takes a few minutes; the full suite fits in an hour on a two-core CPU).
``--long`` runs only the benchmarks with a long form, with its arguments (the soak's 20
minutes), each a record of the store like any other. The
figures the script wrote to that file and what it printed become one store record (a
benchmark that exits non-zero, a check failed, is recorded too, with its exit code). A
benchmark whose prerequisite is missing is skipped, saying why; the suite exits 1 if any
benchmark failed."""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))

import store  # noqa: E402
import tables  # noqa: E402

REPO = store.REPO
LLAMACPP_BUILD = Path.home() / ".cache" / "inkling"
RECORDING = REPO / "benchmarks" / "store" / "recorded_outputs_base.json"
REPORTING = "benchmarks/traces/reporting"
BASELINE = "1750a51"    # the commit the recorded outputs (RECORDING) were recorded at


class Form(Enum):
    FULL = "full"
    QUICK = "quick"          # tiny inputs: the script works, its figures mean nothing
    LONG = "long"            # the few benchmarks whose figures want a longer run


@dataclass(frozen=True)
class Benchmark:
    name: str                      # the store's file name
    script: str                    # benchmarks/<script>.py
    full: list[str] = field(default_factory=list)
    quick: list[str] = field(default_factory=list)
    needs: Callable[[], str | None] = lambda: None   # why it cannot run here, or None
    long: list[str] | None = None                    # the long form's arguments, if any

    def arguments(self, form: Form) -> list[str]:
        if form is Form.QUICK:
            return [*self.quick, "--quick"]
        return list(self.long if form is Form.LONG and self.long is not None else self.full)


def no_llama_server() -> str | None:
    if shutil.which("llama-server"):
        return None
    if any(LLAMACPP_BUILD.glob("llamacpp-*/build/bin/llama-server")):
        return None
    return "llama-server is not on PATH nor built under ~/.cache/inkling"


def no_recording() -> str | None:
    return None if RECORDING.is_file() else f"no recording file {RECORDING.relative_to(REPO)}"


def no_cuda() -> str | None:
    try:
        import torch
    except ImportError:
        return "torch is not installed"
    return None if torch.cuda.is_available() else "no CUDA device"


def reporting_traces() -> list[str]:
    return sorted(str(p.relative_to(REPO)) for p in (REPO / REPORTING).glob("*.jsonl"))


BENCHMARKS = [
    Benchmark("card_reporting", "card", ["--sets", "reporting", "--lines", "40"], []),
    Benchmark("defaults_reporting", "defaults", ["--runs", "1", "--trace-files", *reporting_traces()],
              []),
    Benchmark("monitor_pays", "monitor_pays", ["--set", "reporting"], []),
    Benchmark("monitor_vocab", "monitor_vocab", ["--zoo", "qwen2.5-coder-0.5b"], []),
    Benchmark("cache_modes", "cache_modes", ["--max-functions", "2"], []),
    Benchmark("cache_kl", "cache_kl", [], []),
    Benchmark("lossless", "lossless", ["--held-out"], []),
    Benchmark("decoders", "decoders", ["--max-functions", "2"], []),
    Benchmark("drafting", "drafting", ["--max-functions", "2"], []),
    Benchmark("thread_choice", "thread_choice", [], []),
    Benchmark("int8", "int8", [], []),
    Benchmark("cpu_layout", "cpu_layout", [], []),
    Benchmark("lsp_overhead", "lsp_overhead", [], []),
    Benchmark("soak", "soak", ["--minutes", "2"], [], long=["--minutes", "20"]),
    Benchmark("peer_step", "peer_step", ["--rounds", "5"], [], no_llama_server),
    Benchmark("peer_llamacpp_reporting", "peer_llamacpp",
              ["--traces", REPORTING, "--limit", "200"], [], no_llama_server),
    Benchmark("recorded_outputs", "recorded_outputs",
              ["check", str(RECORDING.relative_to(REPO))], ["check", str(RECORDING.relative_to(REPO))],
              no_recording),
    Benchmark("code_versions", "code_versions", [BASELINE], ["HEAD"]),
    Benchmark("load_memory", "load_memory", [], []),
    Benchmark("native_step", "native_step", ["--float32-panels", "--int8"], []),
    Benchmark("peer_sizes", "peer_sizes", [], []),
    Benchmark("peer_sizes_16bit", "peer_sizes", ["--weights", "float"], ["--weights", "float"]),
    Benchmark("peer_llamacpp_zoo", "peer_llamacpp",
              # two of the reporting traces: at 0.5B each completion asks five systems,
              # about 40 s in all, most of it llama-server prefilling after each edit
              ["--zoo", "qwen2.5-coder-0.5b", "--traces", f"{REPORTING}/retype-funcy-flow.jsonl",
               f"{REPORTING}/retype-funcy-seqs.jsonl", "--limit", "12"],
              ["--zoo", "qwen2.5-coder-0.5b", "--variant", "tiny"], no_llama_server),
    Benchmark("zoo_table", "zoo_table", [], []),
    Benchmark("gguf_agreement", "gguf_agreement", [], []),
    Benchmark("gpu_suite", "gpu_suite", ["--results", "{tmp}"], ["--results", "{tmp}"], no_cuda),
]


def command(bench: Benchmark, form: Form, json_path: Path, tmp: Path) -> list[str]:
    args = [a.replace("{tmp}", str(tmp)) for a in bench.arguments(form)]
    return [sys.executable, f"benchmarks/{bench.script}.py", *args, "--json", str(json_path)]


def run_one(bench: Benchmark, form: Form) -> tuple[bool, float]:
    """Run ``bench``, append its record; (it succeeded, its wall time)."""
    with tempfile.TemporaryDirectory(prefix=f"inkling-{bench.name}-") as tmp:
        json_path = Path(tmp) / "figures.json"
        argv = command(bench, form, json_path, Path(tmp))
        load_start, date, start = store.loadavg(), store.utc_now(), time.monotonic()
        proc = subprocess.run(argv, cwd=REPO, stdout=subprocess.PIPE, text=True)
        wall = time.monotonic() - start
        if proc.returncode != 0:
            sys.stdout.write(proc.stdout[-2000:])
        try:
            figures = json.loads(json_path.read_text())
        except (OSError, ValueError):
            figures = {}
    shown = [a if not a.startswith(tmp) else "TMP/" + Path(a).name for a in argv[1:]]
    rec = store.record(bench.name, ["python", *shown], proc.stdout, figures, wall,
                       {"start": load_start, "end": store.loadavg()}, date=date)
    if form is not Form.FULL:
        rec[form.value] = True
    if proc.returncode != 0:              # a check failed (its figures say which) or it broke
        rec["exit_code"] = proc.returncode
    store.append_run(rec)
    return proc.returncode == 0, wall


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    forms = ap.add_mutually_exclusive_group()
    forms.add_argument("--quick", action="store_true", help="the quick arguments: a few minutes")
    forms.add_argument("--long", action="store_true",
                       help="only the benchmarks with a long form, with its arguments")
    ap.add_argument("--only", default="", help="comma-separated benchmark names")
    ap.add_argument("--list", action="store_true", help="list the benchmarks and exit")
    args = ap.parse_args(argv)
    if args.list:
        for b in BENCHMARKS:
            print(f"{b.name:24} benchmarks/{b.script}.py {' '.join(b.full)}"[:160])
        return 0
    only = [n for n in args.only.split(",") if n]
    unknown = set(only) - {b.name for b in BENCHMARKS}
    if unknown:
        ap.error(f"unknown benchmarks: {', '.join(sorted(unknown))} (see --list)")
    form = Form.QUICK if args.quick else Form.LONG if args.long else Form.FULL
    chosen = [b for b in BENCHMARKS if (not only or b.name in only)
              and (form is not Form.LONG or b.long is not None)]
    failed, begin = [], time.monotonic()
    for i, bench in enumerate(chosen, 1):
        why = bench.needs()
        if why:
            print(f"[{i}/{len(chosen)}] {bench.name}: skipped ({why})", flush=True)
            continue
        print(f"[{i}/{len(chosen)}] {bench.name} ...", flush=True)
        ok, wall = run_one(bench, form)
        total = time.monotonic() - begin
        print(f"[{i}/{len(chosen)}] {bench.name}: {'ok' if ok else 'FAILED'} in {wall:.0f} s "
              f"({total:.0f} s so far)", flush=True)
        if not ok:
            failed.append(bench.name)
    tables.write()
    print(f"suite: {len(chosen)} benchmarks in {time.monotonic() - begin:.0f} s; "
          f"{'failed: ' + ', '.join(failed) if failed else 'none failed'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
