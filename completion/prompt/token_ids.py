"""Special-token ids by text, for the fill-in-the-middle formats (``runtime.fim``)."""
from __future__ import annotations


class TokenIds(dict):
    """Special-token ids by text, looked up in ``runtime``'s vocabulary when first asked."""

    def __init__(self, runtime):
        super().__init__()
        self._runtime = runtime

    def __missing__(self, token: str) -> int:
        return self._runtime.token_id(token)
