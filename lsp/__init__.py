"""The language server: the protocol, the message loop, module-level handlers, the model
worker and the conversion between LSP and the completion engine."""
