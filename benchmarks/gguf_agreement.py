"""A GGUF file against the folder llama.cpp's converter made it from, both loaded by inkling:
Q8_0 (its blocks requantized per output channel, model.weights int8) against the folder
quantized at load (int8), and F16 against the folder in float32, on prompts cut from the
bundled traces' files (plain, and FIM in each order). It backs the GGUF section of
docs/runtime.md.

    python benchmarks/gguf_agreement.py [--zoo NAMES] [--tokens 24] [--quick] [--json OUT]

Per pair: the greedy continuations that are the same token for token, the first position
where the others part, and the top-1 agreement of the two models' logits along the
folder's own greedy path (teacher forced: each position's argmax compared, so one early
parting does not decide the rest); for F16 the largest logit difference on that path. The
models are the zoo's few-layer ones (real tokenizers, random weights, so near ties
are many and a greedy path parts early; the top-1 agreement is the figure: the bundled
model's GPT-2 pre-tokenizer is not one a GGUF file carries for inkling); ``--quick``: one
model, one file, 8 tokens."""
from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import parser, write_json  # noqa: E402
from peer_llamacpp import code_texts, greedy_prompts  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
import model_zoo  # noqa: E402

from inkling.evaluation.trace_file import read_trace  # noqa: E402
from inkling.runtime.model_loader import load_runtime  # noqa: E402

TRACES = Path(__file__).resolve().parent / "traces"


def parse_args():
    ap = parser(__doc__, model=False)
    ap.add_argument("--zoo", default="qwen2.5-coder-0.5b,deepseek-coder-1.3b-base",
                    help="zoo models with FIM tokens, comma-separated")
    ap.add_argument("--variant", default="tiny")
    ap.add_argument("--tokens", type=int, default=24, help="greedy tokens a prompt")
    a = ap.parse_args()
    if a.quick:
        a.zoo, a.tokens = "qwen2.5-coder-0.5b", 8
    return a


@torch.inference_mode()
def logits_along(rt, ids: list[int], path: list[int]) -> torch.Tensor:
    """[len(path), vocab] float32: the next-token logits after ``ids`` and each prefix of
    ``path`` (one prefill, then one row a token)."""
    fwd = rt.forward_for("auto")
    kv = fwd.new_store()
    rows = [rt.forward(fwd, torch.tensor([ids]), kv, last_only=True)[0, -1].float()]
    for tok in path[:-1]:
        rows.append(rt.forward(fwd, torch.tensor([[tok]]), kv)[0, -1].float())
    return torch.stack(rows)


@torch.inference_mode()
def greedy(rt, ids: list[int], n: int) -> list[int]:
    fwd = rt.forward_for("auto")
    kv = fwd.new_store()
    logits, out = rt.forward(fwd, torch.tensor([ids]), kv, last_only=True), []
    for _ in range(n):
        out.append(int(logits[0, -1].argmax()))
        logits = rt.forward(fwd, torch.tensor([[out[-1]]]), kv)
    return out


def compare(folder, gguf, prompts, n: int) -> dict:
    """How far ``gguf``'s greedy tokens and logits follow ``folder``'s on ``prompts``."""
    same, parted_at, agree, positions, gap = 0, [], 0, 0, 0.0
    for _, ids in prompts:
        want, got = greedy(folder, ids, n), greedy(gguf, ids, n)
        if want == got:
            same += 1
        else:
            parted_at.append(next(i for i, (a, b) in enumerate(zip(want, got)) if a != b))
        ours, theirs = logits_along(folder, ids, want), logits_along(gguf, ids, want)
        agree += int((ours.argmax(-1) == theirs.argmax(-1)).sum())
        positions += len(want)
        gap = max(gap, float((ours - theirs).abs().max()))
    return {"prompts": len(prompts), "same_greedy": same,
            "first_parting_min": min(parted_at) if parted_at else n,
            "top1_agreement": agree / positions, "max_logit_gap": gap}


def one_model(name: str, a, texts: list[str]) -> dict:
    folder = model_zoo.model_dir(name, a.variant)
    folder_int8 = load_runtime(folder, device="cpu", weights="int8")
    folder_float = load_runtime(folder, device="cpu", weights="float")
    q8 = load_runtime(model_zoo.gguf_file(name, a.variant, "q8_0"), device="cpu",
                      weights="int8")
    f16 = load_runtime(model_zoo.gguf_file(name, a.variant, "f16"), device="cpu",
                       weights="float")
    prompts = greedy_prompts(folder_float, texts)
    return {"q8_0_vs_folder_int8": compare(folder_int8, q8, prompts, a.tokens),
            "f16_vs_folder_float32": compare(folder_float, f16, prompts, a.tokens)}


def main() -> int:
    a = parse_args()
    traces = [read_trace(p) for p in sorted(TRACES.glob("*.jsonl"))]
    texts = code_texts(traces)[:1 if a.quick else None]
    figures: dict = {"tokens": a.tokens}
    print(f"prompts from {len(texts)} files of the bundled traces (plain and FIM in each "
          f"order), {a.tokens} greedy tokens each")
    print("| model | pair | same greedy tokens | first parting | top-1 agreement on the "
          "folder's path | largest logit gap |\n|---|---|---|---|---|---|")
    for name in a.zoo.split(","):
        figures[name] = one_model(name, a, texts)
        for pair, f in figures[name].items():
            print(f"| {name} {a.variant} | {pair} | {f['same_greedy']} of {f['prompts']} | "
                  f"{f['first_parting_min']} | {f['top1_agreement']:.4f} | "
                  f"{f['max_logit_gap']:.2e} |")
    write_json(a.json, figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
