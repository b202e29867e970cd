"""Decoding: greedy, speculative, branched, superposed, sequential and beam decoders over
one prompt cache, their stop rules, token healing, rereading and the ranking of their drafts.

What a completion decodes is decided once, in its decode plan (plan.py: the decoder that
runs, k, the budget, the beam's width, rereading, drafting); planned_request.py builds its
``DecodeRequest`` (request.py) whole from the plan. Every decoder is a function of one
request; ``decode_drafts`` (dispatch.py) runs the one the plan names and ranks its
drafts. The decoders share their step (steps.py: pick a token under the monitor's mask,
feed a forced name, end a draft) and are lossless against ``greedy_decode``: a drafter
changes no token, and a multi-draft decoder's draft i is the greedy continuation of its
i-th first token."""
