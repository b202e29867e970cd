"""inkling against llama.cpp at the sizes people run: the zoo's full-size random-weight models
(scripts/model_zoo.py: public configs, real tokenizers), decode and prefill side by side in
one interleaved run, and the memory bound (issue 70).

    python benchmarks/peer_sizes.py [--zoo qwen2.5-coder-0.5b,qwen2.5-coder-1.5b]
        [--context 512] [--tokens 48] [--rounds 3] [--threads 2] [--weights int8|float]
        [--quick] [--json OUT]

For each model: inkling in this process with ``model.weights int8`` (the native forward over
int8 panels, as ``auto`` loads a model of this size), and llama-server (the peer build of
benchmarks/peer_llamacpp.py, built once into its cache; skipped where it is not built) on
the same folder converted by llama.cpp's own converter to Q8_0 (``-t THREADS -c 4096 -np
1``). ``--weights float``: the native forward over 16-bit panels (the checkpoint's bfloat16
values as they are) against the F16 conversion: the same two bytes a weight. After an untimed round each, a round, in alternating order: each side prefills the same ``--context`` random token
ids from an empty cache and decodes ``--tokens`` tokens greedily, one a forward (llama-server
``/completion`` with ``cache_prompt`` off and ``ignore_eos``; its own ``timings``): decode ms
a token, prefill tokens a second. Beside them, the memory bound of a decoding step: the
bytes of inkling's int8 panels over this machine's read bandwidth (a sum over a buffer of
1 GiB on the same threads, the best of five), and llama-server's resident set after the
runs. The table gives the medians over the rounds and the ratios inkling / llama.cpp.
"""
from __future__ import annotations

import os
import random
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import native_layers_built, parser, write_json  # noqa: E402
from peer_llamacpp import DEFAULT_CACHE, LlamaServer, built_server  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))
import model_zoo  # noqa: E402

from inkling.runtime.model_loader import load_runtime  # noqa: E402


def parse_args():
    ap = parser(__doc__, model=False)
    ap.add_argument("--zoo", default="qwen2.5-coder-0.5b,qwen2.5-coder-1.5b",
                    help="the zoo models, comma-separated")
    ap.add_argument("--variant", default="full")
    ap.add_argument("--context", type=int, default=512, help="prompt tokens")
    ap.add_argument("--tokens", type=int, default=48, help="tokens decoded a round")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--weights", default="int8", choices=("int8", "float"),
                    help="inkling's model.weights: int8 panels against Q8_0 (default), or "
                         "float (16-bit panels where the checkpoint's values are) against F16")
    a = ap.parse_args()
    if a.quick:
        a.zoo, a.variant, a.context, a.tokens, a.rounds = "qwen2.5-coder-0.5b", "tiny", 64, 8, 1
    return a


PEER_TYPE = {"int8": "q8_0", "float": "f16"}    # inkling's weights -> llama.cpp's of as many bytes


def panel_bytes(rt) -> tuple[str, int]:
    """(the native forward's panel storage, the bytes of its panels and output layer's)."""
    fwd = rt.forward_for("native")
    if fwd.name != "native":
        raise SystemExit(f"peer_sizes: {rt.path} runs the {fwd.name} forward, not the native one")
    held = [w for w in fwd.weights if w.dim() == 3] + [fwd.head_panels]
    return fwd.storage, sum(w.numel() * w.element_size() for w in held if w is not None)


def read_bandwidth(threads: int) -> float:
    """Bytes a second that a float32 sum over 1 GiB reads on ``threads`` threads (best of 5)."""
    torch.set_num_threads(threads)
    buf = torch.ones(1 << 28, dtype=torch.float32)
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        buf.sum()
        best = min(best, time.perf_counter() - t0)
    return buf.numel() * buf.element_size() / best


@torch.inference_mode()
def inkling_round(rt, ids: list[int], tokens: int) -> dict:
    """Prefill ``ids`` from an empty cache, then ``tokens`` greedy one-row steps."""
    fwd = rt.forward_for("native")
    kv = fwd.new_store()
    t0 = time.perf_counter()
    logits = rt.forward(fwd, torch.tensor([ids]), kv, last_only=True)
    prefill = time.perf_counter() - t0
    steps = []
    for _ in range(tokens):
        nxt = int(logits[0, -1].argmax())
        t0 = time.perf_counter()
        logits = rt.forward(fwd, torch.tensor([[nxt]]), kv)
        steps.append((time.perf_counter() - t0) * 1000)
    return {"decode_ms": statistics.median(steps), "prefill_tps": len(ids) / prefill}


def llama_round(server: LlamaServer, ids: list[int], tokens: int) -> dict:
    answer, _ = server.post("/completion", {
        "prompt": ids, "n_predict": tokens, "temperature": 0, "top_k": 1,
        "cache_prompt": False, "ignore_eos": True})
    t = answer["timings"]
    return {"decode_ms": t["predicted_per_token_ms"], "prefill_tps": t["prompt_per_second"]}


def resident_mb(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(status.split("VmRSS:")[1].split()[0]) / 1e3


def one_model(name: str, a, binary: Path | None, bandwidth: float) -> tuple[dict, list[str]]:
    folder = model_zoo.model_dir(name, a.variant)
    torch.set_num_threads(a.threads)
    # the native forward asked for: auto gives float weights of 600 M or more the compact one
    rt = load_runtime(folder, device="cpu", dtype="float32", weights=a.weights, forward="native")
    storage, panels = panel_bytes(rt)
    g = random.Random(0)
    server = None
    if binary is not None:
        gguf = model_zoo.gguf_file(name, a.variant, PEER_TYPE[a.weights])
        server = LlamaServer(binary, gguf, a.threads, ("-c", "4096"),
                             Path(f"/tmp/peer_sizes_{name}.log")).start(600)
    got: dict[str, list[dict]] = {"inkling": [], "llama.cpp": []}
    try:
        warm = [g.randrange(3, rt.vocab_size - 300) for _ in range(a.context)]
        inkling_round(rt, warm, 2)                                    # untimed: first calls
        if server is not None:
            llama_round(server, warm, 2)
        for r in range(a.rounds):
            ids = [g.randrange(3, rt.vocab_size - 300) for _ in range(a.context)]
            sides = ["inkling", "llama.cpp"] if r % 2 == 0 else ["llama.cpp", "inkling"]
            for side in sides:
                if side == "inkling":
                    got[side].append(inkling_round(rt, ids, a.tokens))
                elif server is not None:
                    got[side].append(llama_round(server, ids, a.tokens))
        llama_mb = resident_mb(server.proc.pid) if server is not None else None
    finally:
        if server is not None:
            server.stop()
    med = {side: {k: statistics.median(x[k] for x in rows) for k in rows[0]}
           for side, rows in got.items() if rows}
    bound_ms = panels / bandwidth * 1000
    figures = {"inkling": med["inkling"], "bound_ms": bound_ms, "panel_mb": panels / 1e6}
    lines = [f"| {name} | inkling {storage} | {med['inkling']['decode_ms']:.1f} | "
             f"{med['inkling']['decode_ms'] / bound_ms:.2f} | "
             f"{med['inkling']['prefill_tps']:.0f} | {panels / 1e6:.0f} MB of panels |"]
    if "llama.cpp" in med:
        peer = med["llama.cpp"]
        figures["llama_cpp"] = peer | {"resident_mb": llama_mb}
        figures["decode_ratio"] = med["inkling"]["decode_ms"] / peer["decode_ms"]
        figures["prefill_ratio"] = peer["prefill_tps"] / med["inkling"]["prefill_tps"]
        lines.append(f"| {name} | llama.cpp {PEER_TYPE[a.weights].upper()} | "
                     f"{peer['decode_ms']:.1f} | "
                     f"{peer['decode_ms'] / bound_ms:.2f} | {peer['prefill_tps']:.0f} | "
                     f"{llama_mb:.0f} MB resident |")
        lines.append(f"| {name} | inkling / llama.cpp | {figures['decode_ratio']:.2f} | | "
                     f"{1 / figures['prefill_ratio']:.2f} (speed) | |")
    del rt
    return figures, lines


def main() -> int:
    a = parse_args()
    why = native_layers_built()
    if why:
        raise SystemExit(f"peer_sizes: {why}")
    binary = built_server(DEFAULT_CACHE)
    if binary is None:
        print(f"llama-server is not built in {DEFAULT_CACHE} (benchmarks/peer_llamacpp.py "
              "builds it): inkling's side only")
    bandwidth = read_bandwidth(a.threads)
    loads = [os.getloadavg()[0]]
    figures: dict = {"read_gb_s": bandwidth / 1e9}
    lines = [f"{a.context}-token prompt, {a.tokens} tokens decoded, {a.rounds} rounds, "
             f"threads {a.threads}; read bandwidth {bandwidth / 1e9:.1f} GB/s",
             "| model | side | decode ms / token | over the memory bound | prefill tokens / s | "
             "memory |", "|---|---|---|---|---|---|"]
    for name in a.zoo.split(","):
        figures[name], more = one_model(name, a, binary, bandwidth)
        lines += more
        loads.append(os.getloadavg()[0])
    lines.append(f"load average (1 min) {min(loads):.2f} to {max(loads):.2f}")
    figures["load_average_max"] = max(loads)
    print("\n".join(lines))
    write_json(a.json, figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
