"""The language server: protocol, message loop, handlers, model worker and LSP conversions."""
