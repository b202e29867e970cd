"""Prompt-lookup drafting as ``transformers`` does it: the tokens after the first match of the
context's last n tokens (n from 3 down to 1) make a linear draft."""
from __future__ import annotations

import numpy as np

from inkling.completion.drafting.draft_tree import EMPTY, DraftTree, cut, linear

MAX_NGRAM = 3
NUM_PRED_TOKENS = 10


def prompt_lookup(context: list[int], budget: int, ends: frozenset[int],
                  max_ngram: int = MAX_NGRAM, num_pred: int = NUM_PRED_TOKENS) -> DraftTree:
    ids = np.asarray(context, dtype=np.int64)
    n_ctx = len(ids)
    for n in range(min(max_ngram, n_ctx - 1), 0, -1):
        windows = np.lib.stride_tricks.sliding_window_view(ids, n)      # [n_ctx - n + 1, n]
        hits = np.nonzero((windows == ids[-n:]).all(axis=1))[0]
        for start in hits:
            begin = int(start) + n
            end = min(begin + num_pred, n_ctx)
            if begin < end:
                draft = ids[begin:min(end, begin + budget)].tolist()
                return cut(linear(draft, "prompt-lookup"), ends) if draft else EMPTY
    return EMPTY
