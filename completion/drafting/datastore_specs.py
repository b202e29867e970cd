"""The values ``completion.datastore`` and ``model_datastore`` may take (standard library only)."""
from __future__ import annotations

from pathlib import Path

from inkling.completion.errors import OptionError


def validate_datastore_spec(spec: str) -> None:
    """``none``, ``corpus`` or an existing folder."""
    if spec in ("none", "corpus"):
        return
    if not Path(spec).is_dir():
        raise OptionError(f"completion.datastore must be none, corpus or an existing folder; "
                          f"{spec!r} is none of these")


def validate_model_datastore_spec(spec: str) -> None:
    """``auto``, ``none`` or an existing file (``~`` expanded)."""
    if spec not in ("auto", "none") and not Path(spec).expanduser().is_file():
        raise OptionError(f"completion.model_datastore must be auto, none or an existing file; "
                          f"{spec!r} is none of these")
