"""What reading a model folder costs: peak and resident memory, and wall time, of one load in
a fresh process, by transformers' ``from_pretrained`` (the route inkling had) or by the lean
reader (runtime/checkpoint_reader.py), as far as the weights read or through the whole runtime
(the CPU layout included). It backs docs/decisions/lean-reader.md.

    python benchmarks/load_memory.py [--model FOLDER] [--dtypes float32,bfloat16] [--rounds 2]
                                     [--forward compact|auto] [--weights float,int8] [--quick]
                                     [--json OUT]

Every case (route x stage x dtype) runs in a process of its own, the cases interleaved round by
round; a case prints its wall seconds, its resident set after the load and its peak (the
process's ``ru_maxrss``). The model defaults to the bundled one; ``--quick`` runs one round in
float32. ``--weights float,int8`` adds the runtime stage with model.weights int8 (the native
forward's int8 panels, quantized as read: docs/decisions/lean-weights.md). Prints each case's
median over the rounds."""
from __future__ import annotations

import gc
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ROUTES, STAGES = ("old", "new"), ("read", "runtime")


def old_read(path: Path, dtype, device, *unused):
    """The route before the lean reader: transformers' auto class (float weights only)."""
    from transformers import AutoModelForCausalLM
    model = AutoModelForCausalLM.from_pretrained(
        path, dtype=dtype, local_files_only=True, use_safetensors=True,
        trust_remote_code=False, attn_implementation="sdpa")
    return model.to(device).eval()


def resident_mb() -> float:
    status = Path("/proc/self/status").read_text()
    return int(status.split("VmRSS:")[1].split()[0]) / 1e3


def one_case(route: str, stage: str, folder: str, dtype: str, forward: str = "compact",
             weights: str = "float") -> dict:
    """Load once in this process; its figures."""
    import torch
    from inkling.runtime import model_setup
    path = Path(folder).expanduser().resolve()
    if route == "old":
        model_setup.read_model = old_read
    start = time.perf_counter()
    if stage == "read":
        model = model_setup.read_model(path, getattr(torch, dtype), torch.device("cpu"))
    else:
        from inkling.runtime.model_loader import load_runtime
        model = load_runtime(path, device="cpu", dtype=dtype, forward=forward,
                             weights=weights).model
    gc.collect()
    wall = time.perf_counter() - start
    assert model is not None                        # held while the resident set is read
    return {"wall_s": wall, "resident_mb": resident_mb(),
            "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3}


def main() -> int:
    if sys.argv[1:2] == ["--case"]:
        print(json.dumps(one_case(*sys.argv[2:8])))
        return 0
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from common import parser, write_json   # here: a case's process loads nothing else
    ap = parser(__doc__)
    ap.add_argument("--dtypes", default="float32,bfloat16")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--forward", default="compact", help="the runtime stage's model.forward "
                    "(auto: the native panels too, on a model that runs them)")
    ap.add_argument("--weights", default="float", help="the runtime stage's model.weights, "
                    "comma-separated (int8: the new route in float32, model.forward auto)")
    args = ap.parse_args()
    folder = args.model or str(REPO / "models" / "inkling-tiny")
    dtypes = ["float32"] if args.quick else args.dtypes.split(",")
    cases = [(r, s, d, "float") for d in dtypes for s in STAGES for r in ROUTES]
    cases += [("new", "runtime", "float32", w) for w in args.weights.split(",") if w != "float"]
    runs: dict[tuple, list[dict]] = {c: [] for c in cases}
    for n in range(1 if args.quick else args.rounds):
        for case in cases if n % 2 == 0 else cases[::-1]:
            forward = "auto" if case[3] == "int8" else args.forward
            out = subprocess.run([sys.executable, __file__, "--case", *case[:2], folder, case[2],
                                  forward, case[3]],
                                 capture_output=True, text=True, check=True)
            runs[case].append(json.loads(out.stdout.strip().splitlines()[-1]))
    figures = {}
    for (route, stage, dtype, weights), got in runs.items():
        med = {k: statistics.median(g[k] for g in got) for k in got[0]}
        held = "" if weights == "float" else f".{weights}"
        figures[f"{dtype}.{stage}.{route}{held}"] = med
        print(f"{dtype:9} {stage:8} {route}{held}: peak {med['peak_mb']:8.0f} MB, resident "
              f"{med['resident_mb']:8.0f} MB, {med['wall_s']:.1f} s")
    print(f"{folder}; {len(runs[cases[0]])} rounds")
    write_json(args.json, figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
