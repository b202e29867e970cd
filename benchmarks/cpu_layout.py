"""Forward time on the CPU with transformers' linear layers and with inkling's layout.

    python benchmarks/cpu_layout.py [--model PATH] [--context 900] [--rounds 5] [--quick] [--json OUT]

Loads the model twice, as transformers lays it out (``nn.Linear``, weights [out, in])
and as inkling's runtime does (``InputMajorLinear``, weights [in, out]), and times one
decoding forward of n rows (a chain, as a verified draft) after ``--context`` cached
tokens, for n = 1, 2, 3, 5, 8 and 16. Rounds alternate between the two so that machine
noise hits both alike; the figures are medians over rounds of per-round medians.

A second table times inkling's runtime with transformers' SDPA attention (which
repeats a GQA model's cached keys and values for a masked forward of several rows) and
with packed GQA attention (``runtime/gqa_attention.py``), switching the one loaded model
between the two every round: two model instances differ by several percent on this
machine for reasons of their own, which would hide a difference of that size.

A third table does the same for the large layers held in oneDNN's packed layout
(``PackedLinear``: the bundled model's output layer), switched with ``x @ Wt``
(``InputMajorLinear``) on the same weights, and times the output layer alone.
"""
from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import parser, write_json  # noqa: E402

from inkling.cache.prompt_cache import PromptCache  # noqa: E402
from inkling.models import BUNDLED_MODEL_DIR  # noqa: E402
from inkling.runtime.cpu_layout import InputMajorLinear, PackedLinear  # noqa: E402
from inkling.runtime.gqa_attention import NAME as PACKED  # noqa: E402
from inkling.runtime.model_loader import load_runtime  # noqa: E402

ROWS = (1, 2, 3, 5, 8, 16)


def forward_ms(runtime, context: list[int], n: int, reps: int) -> float:
    """Median ms of an n-row chain forward after ``context`` cached tokens."""
    cache = PromptCache(runtime, mode="full")
    cache.extend(context, last_only=True)
    tokens, parents = [100 + i for i in range(n)], [-1] + list(range(n - 1))
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        cache.extend_tree(tokens, parents)
        times.append((time.perf_counter() - t0) * 1000)
        cache.truncate(len(context))
    return statistics.median(times)


def main() -> int:
    ap = parser(__doc__)
    ap.add_argument("--context", type=int, default=900)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--reps", type=int, default=40)
    args = ap.parse_args()
    if args.quick:
        args.context, args.rounds, args.reps = 100, 1, 3
    model = args.model or str(BUNDLED_MODEL_DIR)
    inkling = load_runtime(model, device="cpu", dtype="float32")
    plain = load_runtime(model, device="cpu", dtype="float32")
    from transformers import AutoModelForCausalLM
    plain.model = AutoModelForCausalLM.from_pretrained(
        plain.path, dtype=torch.float32, local_files_only=True, attn_implementation="sdpa").eval()
    context = [10 + i % (inkling.vocab_size - 10) for i in range(args.context)]
    runs = {"transformers": plain, "inkling": inkling}
    ms = {(name, n): [] for name in runs for n in ROWS}
    for _ in range(args.rounds):
        for name, rt in runs.items():
            for n in ROWS:
                ms[name, n].append(forward_ms(rt, context, n, args.reps))
    print(f"model {inkling.path.name}, cpu, {torch.get_num_threads()} threads, "
          f"{args.context} cached tokens; forward ms (median of {args.rounds} rounds)")
    print(f"{'rows':<13}" + "".join(f"{n:>8}" for n in ROWS))
    for name in runs:
        print(f"{name:<13}" + "".join(f"{statistics.median(ms[name, n]):>8.2f}" for n in ROWS))
    ratio = [statistics.median(ms["inkling", n]) / statistics.median(ms["transformers", n])
             for n in ROWS]
    print(f"{'inkling/hf':<13}" + "".join(f"{r:>8.2f}" for r in ratio))
    attention(inkling, context, args.rounds * 3, args.reps // 2)
    packed_layers(inkling, context, args.rounds * 3, args.reps // 2)
    write_json(args.json, {f"rows_{n}": {"inkling_ms": statistics.median(ms["inkling", n]),
                                         "inkling_over_transformers": r}
                           for n, r in zip(ROWS, ratio)})
    return 0


def packed_layers(runtime, context: list[int], rounds: int, reps: int) -> None:
    """The model's packed layers against ``x @ Wt`` on the same weights, switched every
    round: a whole forward, and the output layer alone."""
    model = runtime.model
    packed = [(parent, name, child) for parent in model.modules()
              for name, child in parent.named_children() if isinstance(child, PackedLinear)]
    if not packed:
        print("\npacked layers: none in this model (oneDNN missing, or every layer small)")
        return
    plain = [(parent, name, InputMajorLinear(child.weight.t().contiguous(), child.bias))
             for parent, name, child in packed]
    head = model.get_output_embeddings()
    ms = {(name, n): [] for name in ("x @ Wt", "packed", "head x @ Wt", "head packed")
          for n in ROWS}
    for r in range(rounds):
        for name, layers in (("packed", packed), ("x @ Wt", plain))[::1 if r % 2 else -1]:
            for parent, attr, layer in layers:
                setattr(parent, attr, layer)
            out = model.get_output_embeddings()
            for n in ROWS:
                ms[name, n].append(forward_ms(runtime, context, n, reps))
                x = torch.randn(1, n, out.in_features)
                with torch.inference_mode():
                    t0 = time.perf_counter()
                    for _ in range(reps):
                        out(x)
                ms["head " + name, n].append((time.perf_counter() - t0) / reps * 1000)
    for parent, attr, layer in packed:
        setattr(parent, attr, layer)
    where = "the output layer" if any(c is head for _, _, c in packed) else "large layers"
    print(f"\npacked layers ({len(packed)}: {where}), one model switched ({rounds} rounds)")
    print(f"{'rows':<13}" + "".join(f"{n:>8}" for n in ROWS))
    for name in ("x @ Wt", "packed", "head x @ Wt", "head packed"):
        print(f"{name:<13}" + "".join(f"{statistics.median(ms[name, n]):>8.2f}" for n in ROWS))
    ratio = [statistics.median(ms["packed", n]) / statistics.median(ms["x @ Wt", n])
             for n in ROWS]
    print(f"{'packed/x@Wt':<13}" + "".join(f"{r:>8.2f}" for r in ratio))


def attention(runtime, context: list[int], rounds: int, reps: int) -> None:
    """The same model with transformers' SDPA and with packed GQA, switched every round."""
    if runtime.model.config._attn_implementation != PACKED:
        print("\nattention: the model has no grouped key/value heads; nothing to compare")
        return
    ms = {(name, n): [] for name in ("sdpa", PACKED) for n in ROWS}
    for r in range(rounds):
        for name in ("sdpa", PACKED) if r % 2 else (PACKED, "sdpa"):
            runtime.model.set_attn_implementation(name)
            for n in ROWS:
                ms[name, n].append(forward_ms(runtime, context, n, reps))
    runtime.model.set_attn_implementation(PACKED)
    print(f"\nattention, one model switched between the two ({rounds} rounds)")
    print(f"{'rows':<13}" + "".join(f"{n:>8}" for n in ROWS))
    for name, label in (("sdpa", "repeat_kv"), (PACKED, "packed gqa")):
        print(f"{label:<13}" + "".join(f"{statistics.median(ms[name, n]):>8.2f}" for n in ROWS))
    ratio = [statistics.median(ms[PACKED, n]) / statistics.median(ms["sdpa", n]) for n in ROWS]
    print(f"{'packed/repeat':<13}" + "".join(f"{r:>8.2f}" for r in ratio))


if __name__ == "__main__":
    sys.exit(main())
