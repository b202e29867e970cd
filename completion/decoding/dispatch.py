"""The decoder the options name, run on one request; its drafts ranked best first."""
from __future__ import annotations

from .branches import branch_decode, sequential_decode
from .greedy import Decoded, greedy_decode
from .ranking import rank_drafts
from .request import DecodeRequest
from .speculative import speculative_decode
from .superposed import superposed_decode

DECODERS = ("greedy", "branches", "superposed", "sequential")


def decode_drafts(r: DecodeRequest, decoder: str) -> tuple[list[Decoded], int]:
    """Decoded drafts (best first, at most ``r.k``) and the decoding forward passes they
    took. One draft is always decoded greedily (speculatively with a drafter), whatever
    ``decoder`` names: the multi-draft decoders' first draft is greedy's."""
    args = (r.stop_ids, r.decode)
    if decoder == "greedy" or r.k == 1:
        if r.drafter is None:
            out = greedy_decode(r.cache, r.logits, r.stop, r.budget, *args, r.cancelled,
                                r.monitor)
        else:
            out = speculative_decode(r.cache, r.logits, r.stop, r.budget, *args, r.drafter,
                                     r.context, r.cancelled, r.monitor, r.meter, r.first,
                                     r.first_logits, r.first_rows)
        return [out], out.forwards
    if decoder == "branches":
        outs, forwards = branch_decode(r.cache, r.logits, r.k, r.stop, r.budget, *args,
                                       r.cancelled, r.monitor, r.drafter, r.context)
    elif decoder == "sequential":
        outs, forwards = sequential_decode(r.cache, r.logits, r.k, r.stop, r.budget, *args,
                                           r.cancelled, r.monitor, r.drafter, r.context)
    elif decoder == "superposed":
        outs, forwards = superposed_decode(r.cache, r.logits, r.k, r.stop, r.budget, *args,
                                           r.sources, r.context, r.cancelled, r.monitor)
    else:
        raise ValueError(f"unknown decoder {decoder!r} (known: {', '.join(DECODERS)})")
    return rank_drafts(outs)[:r.k], forwards          # a decoder may end more than k
