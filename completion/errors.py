"""Errors the Engine raises; each names its culprit so adapters can show it as is."""


class InklingError(Exception):
    """Base class: a problem the user can act on (printed as one line)."""


class DocumentError(InklingError):
    """An unknown document, or a position or range that does not fit it."""


class OptionError(InklingError):
    """An option value that is not valid."""
