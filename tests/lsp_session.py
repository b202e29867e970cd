"""A pytest-lsp session with the real `inkling serve` subprocess: the command, and the
initialisation every server test runs (status notifications recorded, the model waited for).
The `client` fixture in conftest.py is built on it."""
from __future__ import annotations

import asyncio
import sys

from lsprotocol import types as lsp
from pytest_lsp import LanguageClient, client_capabilities

SERVER = [sys.executable, "-m", "inkling.cli.main", "serve"]


async def wait_ready(client: LanguageClient, polls: int = 600) -> None:
    """Until the server says it is ready or failed (`inkling/status`), at most 60 s."""
    for _ in range(polls):
        if any(s.state in ("ready", "error") for s in client.statuses):
            return
        await asyncio.sleep(0.1)


async def start_session(client: LanguageClient, options: dict) -> None:
    """Initialise with ``options`` as the initializationOptions; every `inkling/status`
    notification is kept in ``client.statuses``; returns once the model is ready or failed."""
    client.statuses = []

    @client.feature("inkling/status")
    def on_status(params):
        client.statuses.append(params)

    await client.initialize_session(lsp.InitializeParams(
        capabilities=client_capabilities("visual-studio-code"),
        initialization_options=options))
    await wait_ready(client)
