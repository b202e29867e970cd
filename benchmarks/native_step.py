"""The native forward against the compact one on a zoo model: a one-row step and a 16-row
draft tree after a cached context, ms per forward, interleaved (issue 70).

    python benchmarks/native_step.py [--zoo qwen2.5-coder-0.5b] [--variant full]
        [--context 512] [--threads 2] [--rounds 7] [--steps 5] [--float32-panels] [--int8]
        [--quick] [--json OUT]

Each forward gets its own runtime of the zoo folder read as float32: ``compact`` as
``model.forward auto`` loads it today (oneDNN-packed where a layer is large), ``native`` as
``model.forward native`` does (16-bit panels where every weight is such a value, else float32;
``--float32-panels`` adds float32 panels of the same weights; ``--int8`` the native forward of
``model.weights int8``, int8 panels quantized as read and no float weights). A case after ``--context``
cached tokens (the same random ids for every forward): ``step``, one row at the next
position; ``tree16``, 16 rows of a draft tree (depth 6) under its mask; each with the logits
of every row. The cache is cut back to the context after each forward. A round times
``--steps`` forwards of each case and forward, the order reversed every other round; the
table gives the median of the rounds' medians, native over compact, and the load average
before and after.
"""
from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import parser, write_json  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))
import model_zoo  # noqa: E402

from inkling.runtime import native_llama  # noqa: E402
from inkling.runtime.model_loader import load_runtime  # noqa: E402

TREE_PARENTS = [-1, 0, 0, 1, 1, 2, 3, 3, 4, 5, 6, 6, 7, 8, 9, 10]


def parse_args():
    ap = parser(__doc__, model=False)
    ap.add_argument("--zoo", default="qwen2.5-coder-0.5b", help="the zoo model")
    ap.add_argument("--variant", default="full", help="tiny, layers2 or full")
    ap.add_argument("--context", type=int, default=512, help="cached tokens before a case")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--steps", type=int, default=5, help="forwards of a case a round")
    ap.add_argument("--float32-panels", action="store_true",
                    help="also the native forward on float32 panels")
    ap.add_argument("--int8", action="store_true",
                    help="also the native forward with model.weights int8 (int8 panels "
                    "quantized as read, no float weights)")
    a = ap.parse_args()
    if a.quick:
        a.variant, a.context, a.rounds, a.steps = "tiny", 64, 1, 2
    return a


def forwards(path: Path, float32_panels: bool, int8: bool = False) -> dict:
    """name -> (forward, runtime): compact as auto loads it, native as native does."""
    out = {}
    rt = load_runtime(path, device="cpu", dtype="float32", forward="compact", weights="float")
    out["compact"] = (rt.forward_for("compact"), rt)
    rt = load_runtime(path, device="cpu", dtype="float32", forward="native", weights="float")
    native = rt.native_forward()
    out[f"native-{native.storage}"] = (native, rt)
    if float32_panels and native.storage != "float32":
        with _storage("float32"):
            out["native-float32"] = (native_llama.NativeLlama(rt.model), rt)
    if int8:
        rt = load_runtime(path, device="cpu", dtype="float32", weights="int8")
        out["native-int8"] = (rt.native_forward(), rt)
    return out


class _storage:
    """native_llama.panel_storage fixed to one storage while a forward is made."""

    def __init__(self, storage: str):
        self.storage, self.saved = storage, native_llama.panel_storage

    def __enter__(self):
        native_llama.panel_storage = lambda *a: self.storage

    def __exit__(self, *exc):
        native_llama.panel_storage = self.saved


def tree_case(past: int) -> tuple[torch.Tensor, torch.Tensor]:
    """positions [1, 16] and the bool mask [1, 1, 16, past + 16] of the draft tree."""
    n = len(TREE_PARENTS)
    mask = torch.zeros(1, 1, n, past + n, dtype=torch.bool)
    mask[..., :past] = True
    depth = []
    for i, p in enumerate(TREE_PARENTS):
        depth.append(0 if p < 0 else depth[p] + 1)
        j = i
        while j >= 0:
            mask[0, 0, i, past + j] = True
            j = TREE_PARENTS[j]
    return torch.tensor([[past + d for d in depth]]), mask


@torch.inference_mode()
def prefill(forward, rt, ids: list[int]):
    """A store holding ``ids`` (in chunks of the native rows)."""
    kv = forward.new_store()
    emb = rt.model.get_input_embeddings()
    for at in range(0, len(ids), native_llama.MAX_ROWS):
        chunk = ids[at:at + native_llama.MAX_ROWS]
        forward.forward(kv, emb(torch.tensor([chunk])), torch.arange(at, at + len(chunk))[None],
                        keep=1)
    return kv


@torch.inference_mode()
def time_case(forward, rt, kv, case: str, context: int, steps: int) -> float:
    """The median ms of ``steps`` forwards of ``case`` after ``context`` cached tokens."""
    emb = rt.model.get_input_embeddings()
    if case == "step":
        embeds, positions, mask = emb(torch.tensor([[11]])), torch.tensor([[context]]), None
    else:
        embeds = emb(torch.arange(20, 20 + len(TREE_PARENTS))[None])
        positions, mask = tree_case(context)
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        forward.forward(kv, embeds, positions, mask)
        times.append((time.perf_counter() - t0) * 1000)
        kv.length = context
    return statistics.median(times)


def main() -> int:
    a = parse_args()
    torch.set_num_threads(a.threads)
    path = model_zoo.model_dir(a.zoo, a.variant)
    made = forwards(path, a.float32_panels, a.int8)
    rt = next(iter(made.values()))[1]
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(3, rt.vocab_size, (a.context,), generator=g).tolist()
    stores = {name: prefill(f, r, ids) for name, (f, r) in made.items()}
    cases = ("step", "tree16")
    order = [(c, name) for c in cases for name in made]
    got = {key: [] for key in order}
    loads = [os.getloadavg()[0]]
    for r in range(a.rounds):
        for case, name in order if r % 2 == 0 else order[::-1]:
            f, r_ = made[name]
            got[case, name].append(time_case(f, r_, stores[name], case, a.context, a.steps))
        loads.append(os.getloadavg()[0])
    figures, lines = {}, []
    lines.append(f"{a.zoo} {a.variant}, float32, after {a.context} tokens, threads {a.threads}, "
                 f"{a.rounds} rounds x {a.steps} forwards; load average (1 min) "
                 f"{min(loads):.2f} to {max(loads):.2f}")
    lines.append("| case | " + " | ".join(made) + " | native / compact |")
    lines.append("|---" * (len(made) + 2) + "|")
    for case in cases:
        ms = {name: statistics.median(got[case, name]) for name in made}
        native = next(n for n in made if n.startswith("native"))
        lines.append(f"| {case} | " + " | ".join(f"{ms[n]:.1f} ms" for n in made) +
                     f" | {ms[native] / ms['compact']:.2f} |")
        figures[case] = {n.replace("-", "_"): ms[n] for n in made}
    print("\n".join(lines))
    figures["load_average_max"] = max(loads)
    write_json(a.json, figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
