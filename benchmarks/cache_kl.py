"""How far `pie` and `naive` drift from `full`: mean KL divergence of the next-token
distribution after edits, on the bundled model (or --model).

    python benchmarks/cache_kl.py [--model PATH] [--edits 60] [--quick] [--json OUT]

For held-out standard-library files, a cursor is placed in the file, the three cache
modes sync the prompt, then an edit lands elsewhere (a line inserted or deleted above
the cursor, or below it) and each mode syncs the new prompt. KL(full || mode) of the
next-token distributions is averaged over the edits.
"""
from __future__ import annotations

import random
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import options, parser, write_json  # noqa: E402

from inkling.cache.prompt_cache import PromptCache  # noqa: E402
from inkling.completion.engine import Engine  # noqa: E402
from inkling.completion.prompt.builder import budgets, build_prompt  # noqa: E402
from inkling.models.corpus import load_corpus  # noqa: E402

EDIT_LINES = ["    # note: checked\n", "import sys\n", "\n", "value = compute(1, 2)\n"]


def kl(p_logits: torch.Tensor, q_logits: torch.Tensor) -> float:
    p = torch.log_softmax(p_logits.float(), -1)
    q = torch.log_softmax(q_logits.float(), -1)
    return float((p.exp() * (p - q)).sum())


def edited(text: str, cursor: int, rng: random.Random) -> tuple[str, int]:
    """An edit away from the cursor; returns the new text and the cursor's new offset."""
    lines = text.splitlines(keepends=True)
    starts = [0]
    for ln in lines:
        starts.append(starts[-1] + len(ln))
    cur_line = max(i for i, s in enumerate(starts) if s <= cursor)
    above = rng.random() < 0.5
    choices = range(max(0, cur_line - 40), cur_line) if above else range(
        cur_line + 1, min(len(lines), cur_line + 30))
    if not choices:
        above, choices = not above, range(cur_line + 1, min(len(lines), cur_line + 30))
    at = rng.choice(list(choices))
    if rng.random() < 0.5:
        new = "".join(lines[:at] + [rng.choice(EDIT_LINES)] + lines[at:])
        delta = len(new) - len(text)
    else:
        new = "".join(lines[:at] + lines[at + 1:])
        delta = -len(lines[at])
    return new, cursor + (delta if at < cur_line else 0)


def measure(runtime, n_edits: int, seed: int = 0) -> dict[str, list[float]]:
    rng = random.Random(seed)
    files = [f for f in load_corpus().held_out if f.text.count("\n") > 80]
    pre, suf = budgets(runtime, 0, 0, 160)
    out = {"pie": [], "naive": []}
    for _ in range(n_edits):
        f = rng.choice(files)
        line_starts = [i + 1 for i, c in enumerate(f.text) if c == "\n"]
        cursor = rng.choice(line_starts[40:-20] or line_starts)
        caches = {m: PromptCache(runtime, m, stale_threshold=1.0) for m in ("full", "pie", "naive")}
        p = build_prompt(runtime, f.text[:cursor], f.text[cursor:], (pre, suf), runtime.fim_order)
        for c in caches.values():
            c.sync(p.ids)
        text, cur = edited(f.text, cursor, rng)
        p2 = build_prompt(runtime, text[:cur], text[cur:], (pre, suf), runtime.fim_order)
        ref = caches["full"].sync(p2.ids).logits
        for m in ("pie", "naive"):
            out[m].append(kl(ref, caches[m].sync(p2.ids).logits))
    return out


def main() -> int:
    ap = parser(__doc__)
    ap.add_argument("--edits", type=int, default=60)
    args = ap.parse_args()
    runtime = Engine(options(args)).load_model()
    res = measure(runtime, 4 if args.quick else args.edits)
    for m, vals in res.items():
        print(f"{m:6} mean KL(full || {m}) = {statistics.mean(vals):.4f} nats "
              f"(median {statistics.median(vals):.4f}, max {max(vals):.4f}) over {len(vals)} edits")
    write_json(args.json, {f"mean_kl.{m}": statistics.mean(vals) for m, vals in res.items()})
    return 0


if __name__ == "__main__":
    sys.exit(main())
