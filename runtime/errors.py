"""Errors of the model runtime."""


class ModelError(Exception):
    """A model that cannot be loaded or used: the message names the path and the reason."""
