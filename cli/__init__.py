"""The `inkling` command line: thin commands over the server, the evaluation tools and
training."""
