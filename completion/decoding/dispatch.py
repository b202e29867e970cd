"""The decoder the plan names, run on one request; its drafts ranked best first."""
from __future__ import annotations

from inkling.completion.options import DECODERS
from inkling.completion.decoding.beam import beam_decode_reread
from inkling.completion.decoding.branches import branch_decode, sequential_decode
from inkling.completion.decoding.greedy import greedy_decode
from inkling.completion.decoding.ranking import rank_drafts
from inkling.completion.decoding.request import DecodeRequest
from inkling.completion.decoding.speculative import speculative_decode
from inkling.completion.decoding.steps import Decoded
from inkling.completion.decoding.superposed import superposed_decode

MULTI_DRAFT = {"branches": branch_decode, "sequential": sequential_decode,
               "superposed": superposed_decode, "beam": beam_decode_reread}


def decode_drafts(r: DecodeRequest, decoder: str) -> tuple[list[Decoded], int]:
    """Decoded drafts (best first, at most ``r.k``) and the decoding forward passes they
    took. ``decoder``: the one that runs (``plan.decoder_for``): greedy decodes one
    draft (speculatively with a drafter); the other multi-draft decoders' first draft is
    greedy's, beam searches for the best ones (rereading them where the request says)."""
    if decoder == "greedy":
        out = greedy_decode(r) if r.drafter is None else speculative_decode(r)
        return [out], out.forwards
    if decoder not in MULTI_DRAFT:
        raise ValueError(f"unknown decoder {decoder!r} (known: {', '.join(DECODERS)})")
    outs, forwards = MULTI_DRAFT[decoder](r)
    return rank_drafts(outs)[:r.k], forwards          # a decoder may end more than k
