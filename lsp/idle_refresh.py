"""After ``cache.idle_refresh_ms`` of quiet, ``Engine.idle`` as a job on the model worker
(docs/decisions/pie-cache.md): one event-loop timer, restarted by every edit and completion."""
from __future__ import annotations

import asyncio
from typing import Callable

from lsprotocol import types as lsp

from inkling.completion.engine import Engine

from inkling.lsp.model_worker import ModelWorker


class IdleRefresh:
    def __init__(self, engine: Engine, worker: ModelWorker,
                 log: Callable[[str, lsp.MessageType], None]):
        self._engine = engine
        self._worker = worker
        self._log = log
        self._timer: asyncio.TimerHandle | None = None

    def schedule(self) -> None:
        """Restart the quiet; no refresh while ``idle_refresh_ms`` is 0 or no model is loaded."""
        self.cancel()
        delay_ms = self._engine.options.cache.idle_refresh_ms
        if delay_ms and self._engine.model_loaded:
            loop = asyncio.get_running_loop()
            self._timer = loop.call_later(delay_ms / 1000, self._on_idle)

    def cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()

    def _on_idle(self) -> None:
        self._timer = None
        quiet_ms = self._engine.options.cache.idle_refresh_ms     # the timer's delay, passed
        future = self._worker.run(self._engine.idle, quiet_ms)
        future.add_done_callback(self._done)

    def _done(self, future: asyncio.Future) -> None:
        if not future.cancelled() and future.exception() is None and future.result():
            self._log(f"idle refresh recomputed {future.result()} stale cache tokens",
                      lsp.MessageType.Log)
