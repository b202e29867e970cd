"""What reading a model folder costs: peak and resident memory, and wall time, of one load in
a fresh process, by transformers' ``from_pretrained`` (the route inkling had) or by the lean
reader (runtime/checkpoint_reader.py), as far as the weights read or through the whole
runtime (the CPU layout included).

    /usr/bin/time -v python benchmarks/load_memory.py {old,new} {read,runtime} FOLDER DTYPE

Prints the wall seconds and the resident set after the load; ``/usr/bin/time -v`` gives the
peak ("Maximum resident set size"). Run each case in its own process, interleaved.
"""
from __future__ import annotations

import gc
import sys
import time
from pathlib import Path

import torch

from inkling.runtime import model_setup


def old_read(path: Path, dtype: torch.dtype, device: torch.device) -> torch.nn.Module:
    """The route before the lean reader: transformers' auto class."""
    from transformers import AutoModelForCausalLM
    model = AutoModelForCausalLM.from_pretrained(
        path, dtype=dtype, local_files_only=True, use_safetensors=True,
        trust_remote_code=False, attn_implementation="sdpa")
    return model.to(device).eval()


def resident_gb() -> float:
    status = Path("/proc/self/status").read_text()
    return int(status.split("VmRSS:")[1].split()[0]) / 1e6


def main() -> None:
    route, stage, folder, dtype = sys.argv[1:5]
    path = Path(folder).expanduser().resolve()
    if route == "old":
        model_setup.read_model = old_read
    start = time.perf_counter()
    if stage == "read":
        model = model_setup.read_model(path, getattr(torch, dtype), torch.device("cpu"))
    else:
        from inkling.runtime.model_loader import load_runtime
        model = load_runtime(path, device="cpu", dtype=dtype, forward="compact").model
    gc.collect()
    print(f"{route} {stage} {dtype}: {time.perf_counter() - start:.1f} s, "
          f"resident {resident_gb():.2f} GB, {type(model).__name__}")


if __name__ == "__main__":
    main()
