"""The benchmark store: one JSON-lines file per benchmark, ``benchmarks/store/<name>.jsonl``,
each line one run.

A run is a flat record: ``benchmark``, ``run`` (its 1-based index in the file), ``date``
(UTC, ISO), ``commit``, ``dirty``, ``weights``, ``machine``, ``load`` (``{"start", "end"}``
load averages), ``command`` (argv), ``wall_s``, ``figures`` (name -> number or string) and
``output`` (what the benchmark printed). Runs are only ever appended, so a figure quoted
anywhere can name the run it comes from."""
from __future__ import annotations

import datetime
import json
import os
import platform
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
STORE = REPO / "benchmarks" / "store"
DEFAULT_MODEL = REPO / "models" / "inkling-tiny"


def path_of(name: str, store: Path = STORE) -> Path:
    return Path(store) / f"{name}.jsonl"


def read_runs(name: str, store: Path = STORE) -> list[dict]:
    """Every run of benchmark ``name``, oldest first ([] where it has none)."""
    path = path_of(name, store)
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip()]


def read_run(name: str, run: int, store: Path = STORE) -> dict | None:
    """Run number ``run`` (1-based) of benchmark ``name``, or None."""
    runs = read_runs(name, store)
    return runs[run - 1] if 1 <= run <= len(runs) else None


def names(store: Path = STORE) -> list[str]:
    """The benchmarks the store holds runs of, sorted."""
    return sorted(p.stem for p in Path(store).glob("*.jsonl"))


def append_run(record: dict, store: Path = STORE) -> dict:
    """Append ``record`` to its benchmark's file, numbering it; returns it numbered."""
    name = record["benchmark"]
    path = path_of(name, store)
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {**record, "run": len(read_runs(name, store)) + 1}
    with path.open("a", encoding="utf-8") as f:
        f.write(json.dumps(record, sort_keys=False, ensure_ascii=False) + "\n")
    return record


def record(benchmark: str, command: list[str], output: str, figures: dict, wall_s: float,
           load: dict, date: str | None = None, model: Path = DEFAULT_MODEL) -> dict:
    """A run's record, the machine, commit and weights read now."""
    commit, dirty = git_state()
    return {"benchmark": benchmark, "run": None, "date": date or utc_now(), "commit": commit,
            "dirty": dirty, "weights": weights(model), "machine": machine(), "load": load,
            "command": list(command), "wall_s": round(wall_s, 2), "figures": figures,
            "output": output}


def utc_now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def loadavg() -> float | None:
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


def git_state() -> tuple[str, bool]:
    """(the short commit of HEAD, whether the tree differs from it outside the store)."""
    def git(*args):
        return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True)
    head = git("rev-parse", "--short", "HEAD")
    if head.returncode != 0:
        return "unknown", True
    diff = git("diff", "--quiet", "HEAD", "--", ".", ":!benchmarks/store")
    return head.stdout.strip(), diff.returncode != 0


def weights(model: Path = DEFAULT_MODEL) -> str:
    """The model folder's name, with its training step and run where it records them."""
    model = Path(model)
    try:
        summary = json.loads((model / "train_summary.json").read_text())
    except (OSError, ValueError):
        return model.name
    step, runs = summary.get("steps_done"), summary.get("runs") or []
    return f"{model.name} step {step if step is not None else '?'} of run {len(runs) or '?'}"


def machine() -> dict:
    """The CPU model, its cores, the memory in GiB and the GPU (None without CUDA)."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        memory = round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    except (ValueError, OSError, AttributeError):
        memory = None
    return {"cpu": cpu, "cores": os.cpu_count(), "memory_gib": memory, "gpu": gpu_name()}


def gpu_name() -> str | None:
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout.strip() else None
