"""On the bundled model, pie stays close to full after edits and naive drifts far more:
KL(full || mode) of the next-token distribution once an edit lands away from the cursor."""
import statistics

import pytest
import torch

from inkling.cache.prompt_cache import PromptCache
from inkling.completion.prompt.builder import budgets, build_prompt
from inkling.models.corpus import load_corpus

MODES = ("full", "pie", "naive")


def _kl(p_logits: torch.Tensor, q_logits: torch.Tensor) -> float:
    p = torch.log_softmax(p_logits.float(), -1)
    q = torch.log_softmax(q_logits.float(), -1)
    return float((p.exp() * (p - q)).sum())


def _edits(text: str) -> list[tuple[str, int]]:
    """(edited text, cursor) pairs: the cursor at line 50; a line inserted above it, a line
    deleted above it, a line inserted below it."""
    lines = text.splitlines(keepends=True)
    at = sum(len(ln) for ln in lines[:50])
    inserted = "".join(lines[:20] + ["import sys\n"] + lines[20:])
    deleted = "".join(lines[:30] + lines[31:])
    below = "".join(lines[:60] + ["value = compute(1, 2)\n"] + lines[60:])
    return [(text, at), (inserted, at + len("import sys\n")), (deleted, at - len(lines[30])),
            (below, at)]


@pytest.mark.slow
def test_pie_stays_close_to_full_and_naive_drifts(bundled_model_dir, capsys):
    from inkling.runtime.model_loader import load_runtime
    runtime = load_runtime(bundled_model_dir, device="cpu", dtype="float32")
    window = budgets(runtime, 0, 0, 160)
    files = [f for f in load_corpus().held_out if f.text.count("\n") > 80][:6]
    drift = {"pie": [], "naive": []}
    for f in files:
        (text, cursor), *edits = _edits(f.text)
        for new, at in edits:
            caches = {m: PromptCache(runtime, m, stale_threshold=1.0) for m in MODES}
            before = build_prompt(runtime, text[:cursor], text[cursor:], window, runtime.fim_order)
            for c in caches.values():
                c.sync(before.ids)
            after = build_prompt(runtime, new[:at], new[at:], window, runtime.fim_order)
            ref = caches["full"].sync(after.ids).logits
            for m in drift:
                drift[m].append(_kl(ref, caches[m].sync(after.ids).logits))
    pie, naive = statistics.mean(drift["pie"]), statistics.mean(drift["naive"])
    with capsys.disabled():
        print(f"\nmean KL(full || pie) = {pie:.4f}, mean KL(full || naive) = {naive:.4f}")
    assert pie < 0.25
    assert naive > 3 * pie
