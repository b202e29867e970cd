"""The edit-consistent KV cache: a prompt's keys and values kept across edits, moved tokens'
keys re-rotated (PIE), edit hunks, token-tree masks and the pool of caches."""
