"""The decoder the options name, run on one request; its drafts ranked best first."""
from __future__ import annotations

from .beam import beam_decode
from .branches import branch_decode, sequential_decode
from .greedy import greedy_decode
from .ranking import rank_drafts
from .request import DecodeRequest
from .rereading import reread
from .speculative import speculative_decode
from .steps import Decoded
from .superposed import superposed_decode

DECODERS = ("greedy", "branches", "superposed", "sequential", "beam")
MULTI_DRAFT = {"branches": branch_decode, "sequential": sequential_decode,
               "superposed": superposed_decode, "beam": beam_decode}


def decode_drafts(r: DecodeRequest, decoder: str) -> tuple[list[Decoded], int]:
    """Decoded drafts (best first, at most ``r.k``) and the decoding forward passes they
    took. One draft is decoded greedily (speculatively with a drafter) by any decoder
    but ``beam``, which searches for the best one (its best ``max(k, width)`` drafts
    reread where the request has a ``reread``); the other multi-draft decoders' first
    draft is greedy's."""
    if decoder == "greedy" or (r.k == 1 and decoder != "beam"):
        out = greedy_decode(r) if r.drafter is None else speculative_decode(r)
        return [out], out.forwards
    if decoder not in MULTI_DRAFT:
        raise ValueError(f"unknown decoder {decoder!r} (known: {', '.join(DECODERS)})")
    outs, forwards = MULTI_DRAFT[decoder](r)
    if decoder == "beam" and r.reread is not None:          # the best distinct ones, reread
        outs = reread(rank_drafts(outs)[:max(r.k, r.width)], r.reread, r.shown, r.cancelled)
    return rank_drafts(outs)[:r.k], forwards          # a decoder may end more than k
