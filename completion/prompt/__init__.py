"""The prompt: fill-in-the-middle windows, token healing and the repository-context block."""
