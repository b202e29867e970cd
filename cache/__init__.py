"""The edit-consistent KV cache: a prompt's keys and values kept across edits (PIE)."""
