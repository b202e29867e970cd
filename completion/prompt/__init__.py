"""The prompt: fill-in-the-middle windows around the cursor, token healing, and the
repository-context block in front of them."""
