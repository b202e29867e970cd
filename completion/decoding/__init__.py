"""Decoding: the decoders over one prompt cache, their stop rules, healing and ranking.
Greedy, speculative, branches, superposed, sequential and beam; ``plan.py`` picks one."""
