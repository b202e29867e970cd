"""How a document's KV cache is reused across edits, by name (torch-free: the options tree
and the command line name them without importing torch); cache/prompt_cache.py runs them."""

MODES = ("full", "pie", "naive")
