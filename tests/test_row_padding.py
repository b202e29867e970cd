"""Padding small forwards up to a row bucket changes no logit and leaves no cache entry."""
import torch

from inkling.cache.prompt_cache import PromptCache


def _run(rt, ids, bucket):
    rt.row_bucket = bucket
    try:
        c = PromptCache(rt, "full")
        outs = [c.sync(ids[:40]).logits]
        outs.append(c.extend(ids[40:43]))                          # causal, 3 rows
        outs.append(c.extend_tree([5, 6, 7, 9], [-1, 0, 0, 1]))    # tree mask, 4 rows
        c.keep_new(43, [0, 2])
        outs.append(c.extend(ids[43:45], last_only=True))          # the last row only
        return outs, list(c.ids), c.past.get_seq_length()
    finally:
        rt.row_bucket = 0


def test_padded_rows_change_nothing(tiny_runtime):
    ids = tiny_runtime.encode("def area(w, h):\n    return w * h\n\n\nclass Shape:\n"
                              "    def __init__(self, sides):\n        self.sides = sides\n")
    assert len(ids) >= 45
    plain, ids_a, n_a = _run(tiny_runtime, ids, 0)
    padded, ids_b, n_b = _run(tiny_runtime, ids, 8)
    assert ids_a == ids_b and n_a == n_b == len(ids_a)
    for a, b in zip(plain, padded):
        assert a.shape == b.shape
        torch.testing.assert_close(a, b, atol=1e-4, rtol=1e-4)
