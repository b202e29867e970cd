"""The decoder the plan names, run on one request; its drafts ranked best first."""
from __future__ import annotations

from inkling.completion.decoding.beam import beam_decode_reread
from inkling.completion.decoding.branches import branch_decode, sequential_decode
from inkling.completion.decoding.greedy import greedy_decode
from inkling.completion.decoding.names import Decoder
from inkling.completion.decoding.ranking import rank_drafts
from inkling.completion.decoding.request import DecodeRequest
from inkling.completion.decoding.speculative import speculative_decode
from inkling.completion.decoding.steps import Decoded
from inkling.completion.decoding.superposed import superposed_decode

MULTI_DRAFT = {Decoder.BRANCHES: branch_decode, Decoder.SEQUENTIAL: sequential_decode,
               Decoder.SUPERPOSED: superposed_decode, Decoder.BEAM: beam_decode_reread}


def decode_drafts(r: DecodeRequest, decoder: Decoder) -> tuple[list[Decoded], int]:
    """The drafts of ``decoder`` (``plan.decoder_for``) run on ``r``, best first, at most ``r.k``.
    Returns them with the decoding forward passes they took."""
    if decoder == Decoder.GREEDY:
        out = greedy_decode(r) if r.drafter is None else speculative_decode(r)
        return [out], out.forwards
    if decoder not in MULTI_DRAFT:
        raise ValueError(f"unknown decoder {decoder!r} (known: {', '.join(Decoder)})")
    outs, forwards = MULTI_DRAFT[decoder](r)
    return rank_drafts(outs)[:r.k], forwards          # a decoder may end more than k
