"""inkling's decoding step against llama.cpp's on the same weights, ms per token, side by
side in one run (issue 54).

    python benchmarks/peer_step.py [--sizes bundled,100m] [--threads 1,2] [--context 600]
        [--tokens 48] [--rounds 5] [--cache-dir DIR] [--other-work no] [--out FILE] [--quick] [--json OUT]

Each size is timed in two weight formats, each system reading its own form of the same
weights:

* ``float16``: inkling's native forward on float16 panels (the float16 shards as they are
  shipped) against llama.cpp on a GGUF f16 of the same folder;
* ``int8``: inkling on its int8 conversion (``training/int8_convert.py``: int8 with a scale
  per output channel, read as int8 panels) against llama.cpp on a GGUF Q8_0 converted from
  the same float16 folder (int8 in blocks of 32 with a float16 scale each).

Sizes: ``bundled`` (models/inkling-tiny, 6.25 M parameters) and ``100m`` (random weights,
hidden 768, 15 layers, 12 heads / 4 KV heads, MLP 2048, the bundled tokenizer's 8,192
tokens: 100.7 M parameters; made once into the cache folder, seed 0).

A round of one system: after ``--context`` cached tokens (the same ids both sides),
``--tokens`` greedy tokens, each fed back; ms per token of the decode:

* inkling: the wall time of the round's steps (each ``PromptCache.extend`` of one row,
  the native forward, then the argmax of its logits) over their number (runs 1-2 took the
  median step instead);
* llama.cpp: ``llama-server /completion`` (the prompt cached between rounds, ``top_k`` 1,
  ``ignore_eos``, ``n_predict`` = ``--tokens``): its own ``timings.predicted_per_token_ms``
  (decode and sampling, no HTTP).

The systems, sizes, formats and thread counts take turns round by round (the order
reversed every other round), so the machine's noise falls on all alike; the table gives the
median of the rounds' figures and inkling's time over llama.cpp's. llama.cpp is built and
its GGUFs converted as ``benchmarks/peer_llamacpp.py`` does (its cache folder). Appends the
table, with the commit, the date, the weights' keys and ``--other-work``, to ``--out``.
"""
from __future__ import annotations

import contextlib
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import torch
from transformers import LlamaForCausalLM

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import parser, write_json  # noqa: E402
from peer_llamacpp import (DEFAULT_CACHE, LlamaServer, build_server, convert_model,  # noqa: E402
                           fim_ids, model_key, skip_quick, timing)

from inkling.cache.prompt_cache import PromptCache  # noqa: E402
from inkling.models import BUNDLED_MODEL_DIR  # noqa: E402
from inkling.runtime.model_loader import load_runtime  # noqa: E402
from inkling.training.int8_convert import convert  # noqa: E402
from inkling.training.tokenizer_recipe import save_tokenizer  # noqa: E402
from inkling.training.training import llama_config  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
SHAPE_100M = dict(hidden=768, intermediate=2048, layers=15, heads=12, kv_heads=4)
GGUF_TYPE = {"float16": "f16", "int8": "q8_0"}


def random_100m(cache: Path) -> Path:
    """The 100 M random-weight model (float16 shards, the bundled tokenizer), made once."""
    dest = cache / "random-100m"
    if (dest / "inkling.json").is_file():
        return dest
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(str(BUNDLED_MODEL_DIR / "tokenizer.json"))
    torch.manual_seed(0)
    cfg = llama_config(tok.get_vocab_size(), max_positions=2048, **SHAPE_100M)
    LlamaForCausalLM(cfg).to(torch.float16).save_pretrained(
        dest, safe_serialization=True, max_shard_size="100MB")
    save_tokenizer(tok, dest, 2048)
    (dest / "inkling.json").write_text((BUNDLED_MODEL_DIR / "inkling.json").read_text())
    return dest


def int8_folder(src: Path, cache: Path) -> Path:
    """``src``'s int8 conversion, made once per weights."""
    dest = cache / "int8" / f"{src.name}-{model_key(src)}"
    if not (dest / "inkling.json").is_file():
        convert(src, dest)
    return dest


@dataclass
class Case:
    size: str
    weights: str           # float16 | int8
    threads: int
    runtime: object        # inkling's ModelRuntime of these weights, on ``threads``
    server: LlamaServer    # llama-server on the GGUF of these weights, ``-t threads``
    inkling: list
    llama: list

    @property
    def name(self) -> str:
        return f"{self.size} {self.weights} -t{self.threads}"


def prompt_ids(context: int, vocab: int) -> list[int]:
    return [(i * 7919) % (vocab - 64) + 3 for i in range(context)]


def inkling_round(case: Case, cache: PromptCache, ids: list[int], tokens: int) -> float:
    """Wall ms a greedy step (a one-row forward and its argmax), ``tokens`` steps after
    ``ids`` (cached: the last one is run again for its logits) over their number, as
    llama.cpp's ``predicted_per_token_ms`` is its decode's time over its tokens."""
    torch.set_num_threads(case.threads)
    cache.truncate(len(ids) - 1)
    tok = int(torch.argmax(cache.extend(ids[-1:])[-1]))
    t0 = time.perf_counter()
    for _ in range(tokens):
        tok = int(torch.argmax(cache.extend([tok])[-1]))
    return (time.perf_counter() - t0) * 1000 / tokens


def llama_round(case: Case, ids: list[int], tokens: int) -> float:
    answer, _ = case.server.post("/completion", {
        "prompt": ids, "n_predict": tokens, "top_k": 1, "temperature": 0.0,
        "ignore_eos": True, "cache_prompt": True, "samplers": ["top_k"]})
    got = int(timing(answer, "predicted_n"))
    if got != tokens:
        raise SystemExit(f"llama-server decoded {got} tokens, not {tokens}: {case.name}")
    return timing(answer, "predicted_per_token_ms")


def parse_args():
    ap = parser(__doc__, model=False)
    ap.add_argument("--sizes", default="bundled,100m")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--context", type=int, default=600)
    ap.add_argument("--tokens", type=int, default=48)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE)
    ap.add_argument("--other-work", default="no", help="what else ran (for the record)")
    ap.add_argument("--out", help="append the table here")
    a = ap.parse_args()
    if a.quick:
        a.sizes, a.threads, a.context, a.tokens, a.rounds = "bundled", "1", 100, 4, 1
    return a


def folders(sizes: list[str], cache: Path) -> dict[str, Path]:
    known = {"bundled": lambda: BUNDLED_MODEL_DIR, "100m": lambda: random_100m(cache)}
    bad = [s for s in sizes if s not in known]
    if bad:
        raise SystemExit(f"--sizes: {', '.join(bad)}: one of {', '.join(known)}")
    return {s: known[s]() for s in sizes}


def start_cases(stack, a, binary: Path, found: dict[str, Path], threads: list[int]
                ) -> list[Case]:
    cases = []
    for size, folder in found.items():
        ids = fim_ids(load_runtime(folder, device="cpu", dtype="float32", threads=1))
        for weights, gguf_type in GGUF_TYPE.items():
            gguf = convert_model(a.cache_dir, folder, ids, gguf_type)
            ink = folder if weights == "float16" else int8_folder(folder, a.cache_dir)
            for t in threads:
                rt = load_runtime(ink, device="cpu", dtype="float32", threads=t,
                                  forward="native")
                log = a.cache_dir / f"server-step-{size}-{gguf_type}-t{t}.log"
                server = LlamaServer(binary, gguf, t, (), log)
                stack.callback(server.stop)
                server.start()
                cases.append(Case(size, weights, t, rt, server, [], []))
                print(f"{cases[-1].name}: inkling {ink.name} "
                      f"({rt.native_forward().weights[1].dtype} panels), llama {gguf.name}",
                      flush=True)
    return cases


def next_run(out: Path) -> int:
    """The number of the run to append to ``out`` (its ``# run N`` headers counted)."""
    text = out.read_text(encoding="utf-8") if out.is_file() else ""
    return 1 + sum(line.startswith("# run ") for line in text.splitlines())


def _params(model) -> int:
    """Parameters, a tied embedding counted once (it shares the output layer's storage)."""
    storages: dict[int, int] = {}
    for p in model.parameters():
        storages.setdefault(p.untyped_storage().data_ptr(), p.untyped_storage().nbytes()
                            // p.element_size())
    return sum(storages.values())


def table(cases: list[Case], a, keys: dict[str, str], commit: str, run: int) -> str:
    lines = [f"# run {run}: inkling's decoding step against llama.cpp's (llama-cpp-python's "
             f"vendored llama.cpp), ms per token after {a.context} cached tokens, {a.tokens} "
             f"greedy tokens a round, {a.rounds} interleaved rounds (median of the rounds')",
             f"# commit {commit}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
             f"weights: {', '.join(f'{k} {v}' for k, v in keys.items())}; other work ran: "
             f"{a.other_work}",
             f"$ python benchmarks/peer_step.py --sizes {a.sizes} --threads {a.threads} "
             f"--context {a.context} --tokens {a.tokens} --rounds {a.rounds}",
             f"{'size':<8} {'weights':<8} {'threads':>7} {'params (M)':>10} "
             f"{'inkling ms':>10} {'llama.cpp ms':>12} {'inkling / llama':>15}"]
    for c in cases:
        n = _params(c.runtime.model) / 1e6
        ink, lcp = statistics.median(c.inkling), statistics.median(c.llama)
        lines.append(f"{c.size:<8} {c.weights:<8} {c.threads:>7} {n:>10.2f} {ink:>10.3f} "
                     f"{lcp:>12.3f} {ink / lcp:>15.2f}")
    return "\n".join(lines) + "\n\n"


def main() -> int:
    a = parse_args()
    a.cache_dir.mkdir(parents=True, exist_ok=True)
    if skip_quick(a, a.cache_dir):
        return 0
    threads = [int(t) for t in a.threads.split(",")]
    found = folders(a.sizes.split(","), a.cache_dir)
    binary = build_server(a.cache_dir)
    with contextlib.ExitStack() as stack:
        cases = start_cases(stack, a, binary, found, threads)
        caches = {}
        for c in cases:
            torch.set_num_threads(c.threads)
            caches[c.name] = PromptCache(c.runtime, "full", forward="native")
            ids = prompt_ids(a.context, c.runtime.vocab_size)
            caches[c.name].extend(ids)
            llama_round(c, ids, 2)                       # llama's prompt cached
        for r in range(a.rounds):
            order = cases if r % 2 == 0 else cases[::-1]
            for c in order:
                ids = prompt_ids(a.context, c.runtime.vocab_size)
                for system in (("inkling", "llama") if r % 2 == 0 else ("llama", "inkling")):
                    if system == "inkling":
                        c.inkling.append(inkling_round(c, caches[c.name], ids, a.tokens))
                    else:
                        c.llama.append(llama_round(c, ids, a.tokens))
            print(f"round {r + 1} of {a.rounds} done", flush=True)
        commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                                capture_output=True, text=True).stdout.strip()
        text = table(cases, a, {s: model_key(f) for s, f in found.items()}, commit,
                     next_run(Path(a.out)) if a.out else 1)
        write_json(a.json, {c.name.replace(" ", "_"): {
            "inkling_ms": statistics.median(c.inkling), "llama_ms": statistics.median(c.llama),
            "inkling_over_llama": statistics.median(c.inkling) / statistics.median(c.llama)}
            for c in cases})
    print(text, end="")
    if a.out:
        with open(a.out, "a") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
