"""Decoding: greedy, speculative, branched, superposed and sequential decoders over one
prompt cache, their stop rules, token healing and the ranking of their drafts."""
