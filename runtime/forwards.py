"""The forwards a model can run by, by name (torch-free: the options tree and the command
line name them without importing torch). runtime/forward_choice.py decides which one runs."""

FORWARDS = ("auto", "native", "compact", "captured", "reference")
