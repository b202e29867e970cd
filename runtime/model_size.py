"""Under SMALL_MODEL_PARAMS a forward is bound by per-op overhead, not by weight products."""

SMALL_MODEL_PARAMS = 100_000_000
