"""The GPU suite: correctness and speed of the forwards and decoders on one device, in at
most 8 minutes.

    python benchmarks/gpu_suite.py                 # on a GPU machine, from the repository
    python benchmarks/gpu_suite.py --smoke         # the same sections on the CPU, small

Sections, in order, each with a time budget (``BUDGET_S``; the whole stays under
``--limit`` seconds, 480 by default); a section that fails records its error and the
suite goes on; one whose time is spent stops between its cases and says so, and one
with less than half its budget left of the whole is skipped:

- ``bandwidth``: the device's measured copy bandwidth (GB/s, read + write);
- ``forwards``: the compact and captured forwards against transformers' (float32 and
  bfloat16) on random-weight Qwen2, Llama and StarCoder2-shaped models of 0.5 B and 1.5 B
  parameters (``gpu_models.py``; tiny with ``--smoke``), and on the bundled model;
- ``decoders``: every decoder's drafts on the traces' files (float32) against the CPU's
  recorded in ``store/cpu_drafts.json`` (``gpu_decoders.py --record`` writes it);
- ``steps``: ms of a one-row step, compact (eager) and captured, at 1k / 4k / 16k cached
  tokens, beside the bound (weight bytes over the measured bandwidth), on the bundled
  model and a 1.5 B Qwen2-shaped model in bfloat16; ``trees``: ms of a 1 / 4 / 16 / 64-row
  tree step at 1k tokens;
- ``pie``: the first token after an edit near the top of a 16k-token prompt, PIE against
  full recomputation (the bundled model);
- ``replay``: the bundled traces replayed on the device through ``inkling replay``'s own
  code, with ``--compare completion.draft=none,suffix`` and ``--compare
  completion.decoder=greedy,superposed,branches,beam``, trace by trace while time lasts;
- ``compiled`` (``--compile``): the one-row step under ``torch.compile(mode=
  "reduce-overhead")`` beside the captured one.

Each section's figures are appended to ``gpu_suite_<device>.txt`` in ``--results DIR`` (a
fresh temporary folder by default; a header with the commit, date, device and versions, then
a line a figure, written as each section ends) and the whole run to ``gpu_suite_<device>.json``
beside it; both are copied to ``$OUT`` where that is set (the device machine's way back).
``python benchmarks/suite.py --only gpu_suite`` runs it into the store,
``benchmarks/store/gpu_suite.jsonl``.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import traceback
from datetime import datetime, timezone
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from common import flat, write_json  # noqa: E402  (beside this file)
import gpu_decoders  # noqa: E402
import gpu_models  # noqa: E402
import gpu_speed  # noqa: E402

BUDGET_S = {"bandwidth": 10, "forwards": 110, "decoders": 70, "steps": 70, "trees": 25,
            "pie": 30, "replay": 120, "compiled": 60}
FULL = {"sizes": ("0.5b", "1.5b"), "prompt": 512, "cached": (1024, 4096, 16384),
        "tree_rows": (1, 4, 16, 64), "reps": 50, "pie_tokens": 16384, "mib": 1024,
        "cases": None, "big": "1.5b"}
SMOKE = {"sizes": ("tiny",), "prompt": 40, "cached": (64, 256), "tree_rows": (1, 4, 16),
         "reps": 3, "pie_tokens": 300, "mib": 16, "cases": 2, "big": "tiny"}
TRACES = sorted((HERE / "traces").glob("*.jsonl"))


class Suite:
    """One run: its device, settings, deadline and results, written as they come."""

    def __init__(self, args):
        self.device = torch.device(args.device)
        self.smoke, self.cfg = args.smoke, SMOKE if args.smoke else FULL
        self.end = time.monotonic() + args.limit
        name = device_name(self.device) + ("-smoke" if args.smoke else "")
        folder = Path(args.results or tempfile.mkdtemp(prefix="gpu_suite-"))
        folder.mkdir(parents=True, exist_ok=True)
        self.json = folder / f"gpu_suite_{name}.json"
        self.text = self.json.with_suffix(".txt")
        self.results: dict = {"header": header(self.device, args)}
        self.section_end = self.end
        self.write_text([f"\n## {json.dumps(self.results['header'])}"])

    def left(self) -> float:
        """Seconds left to the section (its budget or the suite's end, the sooner)."""
        return min(self.section_end, self.end) - time.monotonic()

    def alive(self, need: float = 0) -> bool:
        """Whether ``need`` seconds are left to the section."""
        return self.left() > need

    def run(self, name: str, section) -> None:
        t0 = time.monotonic()
        self.section_end = t0 + BUDGET_S[name]
        if self.end - t0 < BUDGET_S[name] / 2:
            out = "skipped: less than half its budget was left of the suite's time"
        else:
            try:
                out = section(self)
            except Exception as exc:       # the suite goes on; the error is the figure
                out = {"error": f"{type(exc).__name__}: {exc}"[:600],
                       "traceback": traceback.format_exc().splitlines()[-6:]}
        self.results[name] = {"seconds": round(time.monotonic() - t0, 1), "result": out}
        self.json.write_text(json.dumps(self.results, indent=1, default=str) + "\n")
        self.write_text([f"{name} ({self.results[name]['seconds']} s): {line}"
                         for line in lines(out)])
        copy_out(self.json, self.text)
        print(f"[gpu_suite] {name}: {self.results[name]['seconds']} s", file=sys.stderr,
              flush=True)

    def write_text(self, text: list[str]) -> None:
        with self.text.open("a", encoding="utf-8") as f:
            f.write("\n".join(text) + "\n")


def device_name(device: torch.device) -> str:
    if device.type != "cuda":
        return "cpu"
    return re.sub(r"[^a-z0-9]+", "-", torch.cuda.get_device_name(device).lower()).strip("-")


def header(device: torch.device, args) -> dict:
    import transformers
    commit = args.commit or git_commit()
    return {"date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "commit": commit or "?", "device": str(device),
            "name": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
            "torch": torch.__version__, "transformers": transformers.__version__,
            "smoke": args.smoke, "compile": args.compile}


def git_commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=HERE, text=True,
                              capture_output=True).stdout.strip()
    except OSError:                                        # no git there
        return ""


def lines(out, prefix: str = "") -> list[str]:
    """A result as ``key = value`` lines (nested keys joined by '.')."""
    if isinstance(out, dict):
        return [line for k, v in out.items() for line in lines(v, f"{prefix}{k}.")]
    if isinstance(out, float):
        out = f"{out:.4g}"
    return [f"{prefix.rstrip('.')} = {out}" if prefix else str(out)]


def copy_out(*paths: Path) -> None:
    out = os.environ.get("OUT")
    if out:
        for p in paths:
            (Path(out) / p.name).write_bytes(p.read_bytes())


# ------------------------------------------------------------------------ sections
def bandwidth(s: Suite) -> dict:
    s.gbps = gpu_speed.copy_bandwidth(s.device, s.cfg["mib"])
    return {"copy_GBps": s.gbps}


def forwards(s: Suite) -> dict:
    out = {"bundled": {}}
    for dtype in (torch.float32, torch.bfloat16):
        model = bundled(s, dtype).model
        out["bundled"][str(dtype)[6:]] = gpu_models.compare_forwards(model, s.cfg["prompt"])
    for size in s.cfg["sizes"]:
        for family in ("qwen2", "llama", "starcoder2"):
            for dtype in (torch.float32, torch.bfloat16):
                key = f"{family}-{size}-{str(dtype)[6:]}"
                if not s.alive():
                    out[key] = "skipped: the section's time ran out"
                    continue
                model = gpu_models.random_model(family, size, dtype, s.device)
                out[key] = gpu_models.compare_forwards(model, s.cfg["prompt"])
                del model
                empty_cache(s.device)
    return out


def decoders(s: Suite) -> dict:
    recorded = json.loads(gpu_decoders.RECORDED.read_text(encoding="utf-8"))
    specs = ["greedy:1"] if s.smoke else None
    out = gpu_decoders.compare(s.device.type, recorded, specs, s.cfg["cases"], s.alive)
    return {"recorded_at": recorded["commit"], **out}


def steps(s: Suite) -> dict:
    out = {}
    for label, model in step_models(s):
        gbps = s.__dict__.get("gbps") or bandwidth(s)["copy_GBps"]
        bound_ms = gpu_models.weight_bytes(model) / (gbps * 1e9) * 1000
        out[label] = {"bound_ms": bound_ms}
        for cached in s.cfg["cached"]:
            for name, forward in step_forwards(model):
                if s.alive():
                    out[label][f"{name}@{cached}"] = gpu_speed.step_ms(forward, cached, 1,
                                                                       s.cfg["reps"])
    return out


def trees(s: Suite) -> dict:
    out = {}
    for label, model in step_models(s):
        for rows in s.cfg["tree_rows"]:
            for name, forward in step_forwards(model):
                if s.alive():
                    out[f"{label}.{name}@{rows}rows"] = gpu_speed.step_ms(
                        forward, s.cfg["cached"][0], rows, s.cfg["reps"])
    return out


def pie(s: Suite) -> dict:
    return gpu_speed.pie_against_full(bundled(s, torch.float32), s.cfg["pie_tokens"])


def replay(s: Suite) -> dict:
    from inkling.cli.main import main as inkling
    out, folder = {}, Path(tempfile.mkdtemp(prefix="gpu_suite_"))
    for trace in TRACES[:1] if s.smoke else TRACES:
        path = short_trace(trace, folder) if s.smoke else trace
        for compare in ("completion.draft=none,suffix",
                        "completion.decoder=greedy,superposed,branches,beam"):
            key = f"{trace.stem}/{compare.split('=')[0].split('.')[-1]}"
            if not s.alive(need=30):             # a replay is not cut midway: start it
                out[key] = "skipped: the section's time ran out"   # with time to finish
                continue
            report = folder / "replay.json"
            rc = inkling(["replay", str(path), "--device", s.device.type, "--dtype",
                          "float32", "--compare", compare, "--json", str(report)])
            runs = json.loads(report.read_text())["runs"]
            out[key] = {"rc": rc, **{label(r["settings"]): figures(r) for r in runs}}
    return out


def compiled(s: Suite) -> dict:
    from inkling.runtime.captured_llama import CapturedLlama
    model = bundled(s, torch.float32).model
    forward = gpu_speed.compiled(CapturedLlama(model, graphs=False))
    return {f"compiled@{c}": gpu_speed.step_ms(forward, c, 1, s.cfg["reps"])
            for c in s.cfg["cached"][:1]}


SECTIONS = {"bandwidth": bandwidth, "forwards": forwards, "decoders": decoders,
            "steps": steps, "trees": trees, "pie": pie, "replay": replay,
            "compiled": compiled}


# ------------------------------------------------------------------------ helpers
def bundled(s: Suite, dtype: torch.dtype):
    """The bundled model's runtime on the suite's device in ``dtype`` (loaded once)."""
    from inkling.runtime.model_loader import load_runtime
    from inkling.models import BUNDLED_MODEL_DIR
    cache = s.__dict__.setdefault("runtimes", {})
    if dtype not in cache:
        cache[dtype] = load_runtime(BUNDLED_MODEL_DIR, device=s.device.type,
                                    dtype=str(dtype)[6:])
    return cache[dtype]


def step_models(s: Suite):
    """(label, model) of the speed sections: the bundled model (float32), and a
    Qwen2-shaped model of ``big`` size in bfloat16 (made once)."""
    if "big" not in s.__dict__:
        s.big = gpu_models.random_model("qwen2", s.cfg["big"], torch.bfloat16, s.device)
    return [("bundled-float32", bundled(s, torch.float32).model),
            (f"qwen2-{s.cfg['big']}-bfloat16", s.big)]


def step_forwards(model):
    from inkling.runtime.captured_llama import CapturedLlama
    from inkling.runtime.compact_llama import CompactLlama
    return [("compact", CompactLlama(model)), ("captured", CapturedLlama(model))]


def empty_cache(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.empty_cache()


def short_trace(trace: Path, folder: Path, completions: int = 2) -> Path:
    """The trace up to its ``completions``-th completion and that completion's accept."""
    kept, seen = [], 0
    for line in trace.read_text(encoding="utf-8").splitlines():
        kind = json.loads(line)["kind"]
        if seen >= completions and kind != "accept":
            break
        kept.append(line)
        seen += kind == "complete"
    path = folder / trace.name
    path.write_text("\n".join(kept) + "\n", encoding="utf-8")
    return path


def label(settings: dict) -> str:
    return ",".join(f"{k.split('.')[-1]}={v}" for k, v in settings.items())


def figures(run: dict) -> dict:
    from inkling.evaluation.comparison import TABLE_ROWS
    return {k: run[k]["p50"] if isinstance(run.get(k), dict) and "p50" in run[k]
            else run.get(k) for k in TABLE_ROWS}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--smoke", "--quick", dest="smoke", action="store_true",
                    help="small shapes, a few iterations")
    ap.add_argument("--json", type=Path, help="write the sections' figures here (name -> number)")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--results", help="where the raw figures go (default: a temporary folder)")
    ap.add_argument("--limit", type=float, default=480, help="seconds for the whole suite")
    ap.add_argument("--compile", action="store_true",
                    help='also time torch.compile(mode="reduce-overhead")')
    ap.add_argument("--commit", default="", help="the commit to record (default: git's; "
                    "the device machine's copy of the tree has no git history)")
    ap.add_argument("--sections", default=",".join(SECTIONS), help="a comma-separated subset")
    args = ap.parse_args(argv)
    suite = Suite(args)
    chosen = [n for n in args.sections.split(",") if n != "compiled" or args.compile]
    for name in chosen:
        suite.run(name, SECTIONS[name])
    failed = [n for n in chosen if isinstance(suite.results[n]["result"], dict)
              and "error" in suite.results[n]["result"]]
    write_json(args.json, {"sections_ran": len(chosen) - len(failed),
                           **flat({n: suite.results[n]["result"] for n in chosen
                                   if isinstance(suite.results[n]["result"], dict)})})
    print(f"[gpu_suite] {suite.text}: {len(chosen) - len(failed)} of {len(chosen)} sections "
          f"ran{'; failed: ' + ', '.join(failed) if failed else ''}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
