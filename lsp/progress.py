"""``$/progress`` for one job on the model worker, begun and ended on the event loop, reported
from the worker; every report also sends ``inkling/status``."""
from __future__ import annotations

import asyncio
import uuid

from lsprotocol import types as lsp

from inkling.lsp.language_server import InklingServer


class WorkDoneProgress:
    def __init__(self, ls: InklingServer, kind: str, state: str):
        """``kind`` names the token; ``state`` is the status each report sends."""
        self._ls = ls
        self._loop = asyncio.get_running_loop()
        self._token = f"inkling-{kind}-{uuid.uuid4().hex[:8]}"
        self._state = state
        self._enabled = False

    async def begin(self, title: str) -> None:
        """Create the token and begin; a client without it gets the status notifications only."""
        caps = self._ls.client_capabilities.window
        if not (caps and caps.work_done_progress):
            return
        try:
            await self._ls.work_done_progress.create_async(self._token)
        except Exception as exc:   # the client may refuse; progress is optional
            self._ls.log(f"no progress reporting: {exc}", lsp.MessageType.Warning)
            return
        self._ls.work_done_progress.begin(self._token, lsp.WorkDoneProgressBegin(
            title=title, percentage=0, cancellable=False))
        self._enabled = True

    def report(self, stage: str, fraction: float) -> None:
        """The job's progress callback (on the model worker): passed to the event loop."""
        self._loop.call_soon_threadsafe(self._report, stage, round(fraction * 100))

    def _report(self, stage: str, pct: int) -> None:
        if self._enabled:
            self._ls.work_done_progress.report(self._token, lsp.WorkDoneProgressReport(
                message=stage, percentage=pct))
        self._ls.status(self._state, stage, pct)

    def end(self, message: str) -> None:
        if self._enabled:
            self._ls.work_done_progress.end(self._token, lsp.WorkDoneProgressEnd(message=message))
