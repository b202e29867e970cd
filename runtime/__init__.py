"""The model runtime: loading, the forwards, the native build, threads, tokenization, FIM."""
