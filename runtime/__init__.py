"""The model runtime: loading a model, its forwards (compact, native, captured), the native
build, threads, tokenization and fill-in-the-middle formats."""
