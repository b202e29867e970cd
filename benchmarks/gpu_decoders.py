"""Every decoder's drafts on a device against the CPU's, on the same prompts.

    python benchmarks/gpu_decoders.py --record             # on the CPU: write the JSON
    python benchmarks/gpu_decoders.py greedy:1 beam:3      # CPU and CUDA here, side by side

The prompts: lines of the files the bundled traces carry (``benchmarks/traces``: chunk.py,
copyreg.py, sched.py, the same text on every machine), each line emptied after its
indent and completed there (invoked, spm, float32, the bundled model, no datastore: the
corpus is the machine's own standard library). ``--record`` writes each decoder's drafts
on this CPU to ``benchmarks/store/cpu_drafts.json`` (committed); ``gpu_suite.py``
compares a device's drafts against it (``compare``). Given DECODER:K arguments, both
devices run here, each on a fresh Engine, and the counts of equal drafts and each
device's latency p50 are printed and written to $OUT/gpu_compare.json (or ./).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
from pathlib import Path

HERE = Path(__file__).resolve().parent
TRACES = HERE / "traces"
RECORDED = HERE / "store" / "cpu_drafts.json"
SPECS = ("greedy:1", "beam:1", "beam:3", "superposed:3", "branches:3", "sequential:3")
PER_FILE = 14                                    # 3 files: 42 completions a decoder


def trace_files() -> dict[str, str]:
    """The files the bundled traces carry, by name (each text the same in every trace)."""
    files = {}
    for trace in sorted(TRACES.glob("*.jsonl")):
        for line in trace.read_text(encoding="utf-8").splitlines():
            event = json.loads(line)
            if event.get("kind") == "file":
                files.setdefault(event["path"], event["text"])
    return files


def prompts(per_file: int, files: int = 3) -> list[tuple[str, str, int]]:
    """(name, text, line) of the completions: ``per_file`` sampled lines of each file."""
    from inkling.evaluation.held_out import sample_lines
    chosen = sorted(trace_files().items())[:files]
    return [(name, text, no) for name, text in chosen
            for no in sample_lines(text, per_file, 0)]


def engine(device: str, decoder: str):
    from inkling.completion.engine import Engine
    from inkling.completion.options import InklingOptions
    e = Engine(InklingOptions().merged({
        "model": {"device": device, "dtype": "float32"},
        "completion": {"decoder": decoder, "fim_order": "spm", "datastore": "none"}}))
    e.load_model()
    return e


def drafts(device: str, spec: str, cases) -> tuple[list[list[str]], list[float]]:
    """Each case's drafts (texts) and latency (ms) with decoder:k ``spec`` on ``device``."""
    from inkling.completion.document import Position
    decoder, k = spec.split(":")
    e = engine(device, decoder)
    out, ms = [], []
    for _, text, no in cases:
        lines = text.split("\n")
        indent = lines[no][:len(lines[no]) - len(lines[no].lstrip())]
        lines[no] = indent
        e.open("file:///x.py", "\n".join(lines))
        d = e.complete("file:///x.py", Position(no, len(indent)), k=int(k), trigger="invoked")
        e.close("file:///x.py")
        out.append([x.text for x in d.drafts])
        ms.append(d.latency_ms)
    return out, ms


def record(path: Path = RECORDED, specs=SPECS, per_file: int = PER_FILE) -> dict:
    """This CPU's drafts for every spec, written to ``path`` with the commit."""
    cases = prompts(per_file)
    data = {"commit": _commit(), "per_file": per_file,
            "cases": [[name, no] for name, _, no in cases],
            "drafts": {spec: drafts("cpu", spec, cases)[0] for spec in specs}}
    path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    return data


def compare(device: str, recorded: dict, specs=None, limit: int | None = None,
            alive=lambda: True) -> dict:
    """``device``'s drafts against the recorded CPU drafts: per spec, completions compared,
    how many gave the same drafts (all, and the first), the latency p50 (ms), and the
    first differing case. ``limit``: the first ``limit`` cases only; ``alive()`` False
    stops before the next spec."""
    cases = prompts(recorded["per_file"])[:limit]
    assert [[n, no] for n, _, no in cases] == recorded["cases"][:len(cases)], \
        "the recorded cases are not these prompts: record again (--record)"
    out = {}
    for spec in specs or recorded["drafts"]:
        if not alive():
            out[spec] = "skipped: the section's time ran out"
            continue
        got, ms = drafts(device, spec, cases)
        want = recorded["drafts"][spec][:len(cases)]
        differ = [i for i, (a, b) in enumerate(zip(got, want)) if a != b]
        out[spec] = {"completions": len(got), "all_drafts_same": len(got) - len(differ),
                     "first_same": sum(a[:1] == b[:1] for a, b in zip(got, want)),
                     "p50_ms": sorted(ms)[len(ms) // 2],
                     "first_difference": None if not differ else
                     {"case": cases[differ[0]][::2], "got": got[differ[0]],
                      "cpu": want[differ[0]]}}
    return out


def _commit() -> str:
    return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=HERE, text=True,
                          capture_output=True).stdout.strip()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("specs", nargs="*", metavar="DECODER:K")
    ap.add_argument("--record", action="store_true", help=f"write {RECORDED.name}")
    args = ap.parse_args()
    if args.record:
        data = record()
        print(f"{RECORDED}: {len(data['cases'])} cases x {len(data['drafts'])} decoders")
        return
    cases, res = prompts(PER_FILE), {}
    for spec in args.specs:
        (cpu, tc), (gpu, tg) = drafts("cpu", spec, cases), drafts("cuda", spec, cases)
        res[spec] = {"completions": len(cpu), "all_drafts_same": sum(map(list.__eq__, cpu, gpu)),
                     "p50_ms_cpu": sorted(tc)[len(tc) // 2],
                     "p50_ms_cuda": sorted(tg)[len(tg) // 2]}
        print(spec, res[spec], flush=True)
    Path(os.environ.get("OUT", "."), "gpu_compare.json").write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
