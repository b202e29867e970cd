"""Decoding: greedy, speculative, branched, superposed and sequential decoders over one
prompt cache, their stop rules, token healing and the ranking of their drafts.

Every decoder is a function of one ``DecodeRequest`` (request.py); ``decode_drafts``
(dispatch.py) runs the one the options name and ranks its drafts. The decoders share
their step (steps.py: pick a token under the monitor's mask, feed a forced name, end a
draft) and are lossless against ``greedy_decode``: a drafter changes no token, and a
multi-draft decoder's draft i is the greedy continuation of its i-th first token."""
