"""Model runtime and the edit-consistent KV cache."""
