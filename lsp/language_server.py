"""The pygls server of `inkling serve`: its state and the messages it sends.

The Engine belongs to the model worker (lsp/model_worker.py); everything here belongs to the
event loop, which never waits on the model and reads only ``engine.options``, replaced whole.
Over stdio the server is the process's one session; over TCP each connection is one, its
own server and Engine, on the one model thread."""
from __future__ import annotations

import asyncio
import functools
import logging
import sys
import weakref
from typing import Any, Callable

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer

from inkling.completion.engine import Engine
from inkling.completion.errors import DocumentError, InklingError

from inkling.lsp.idle_refresh import IdleRefresh
from inkling.lsp.message_loop import run_stdio
from inkling.lsp.model_worker import CancelToken, ModelThread, ModelWorker
from inkling.lsp.notices import Notices
from inkling.lsp.protocol import InklingProtocol, flush_and_exit
from inkling.lsp.server_stats import ServerStats
from inkling.lsp.strict_converter import strict_converter
from inkling.lsp.typing_cadence import TypingCadence

log = logging.getLogger("inkling.server")
VERSION = "0.1.0"
STATUS = "inkling/status"
SESSIONS: weakref.WeakSet = weakref.WeakSet()    # the servers alive (the event loop's)
COMPLETIONS = frozenset({lsp.TEXT_DOCUMENT_INLINE_COMPLETION, lsp.TEXT_DOCUMENT_COMPLETION})


def ended_quietly(handler: Callable) -> Callable:
    """``handler`` (a coroutine one), stopped without a fault by the end of its session: the
    session's jobs are cancelled then, and what awaited them returns None. pygls' own
    handlers, which wrap some of inkling's, do not expect a cancelled await."""
    if not asyncio.iscoroutinefunction(handler):
        return handler

    @functools.wraps(handler)
    async def run(ls: InklingServer, *args):
        try:
            return await handler(ls, *args)
        except asyncio.CancelledError:
            if not ls.worker.closed:
                raise
            return None
    return run


class InklingServer(LanguageServer):
    """The Engine and its model worker, and the event loop's own bookkeeping."""

    def __init__(self, engine: Engine, thread: ModelThread | None = None):
        super().__init__("inkling", VERSION, protocol_cls=InklingProtocol,
                         converter_factory=strict_converter)
        self.engine = engine
        self.worker = ModelWorker(thread)
        self.hang_up: Callable[[], None] | None = None    # a TCP session: close its socket
        SESSIONS.add(self)
        self.stats = ServerStats()
        self.cadence = TypingCadence()
        self.idle = IdleRefresh(engine, self.worker, self.log)
        self.state = "starting"
        self.last_latency_ms: float | None = None
        self.last_completion: dict | None = None
        self._read_jobs: dict[Any, tuple[str, CancelToken]] = {}   # request id -> (uri, token)
        self.notices = Notices(lambda message: self.window_show_message(
            lsp.ShowMessageParams(type=lsp.MessageType.Error, message=message)))

    def request_read(self, method: str, message) -> None:
        """A completion takes its cancel token as its request is read: pygls starts the handler
        later, as a task, after the edits and closes read in the same batch, which must cancel
        it (-32801), not find it not yet started."""
        if method in COMPLETIONS:
            uri = message.params.text_document.uri
            self._read_jobs[message.id] = (uri, self.worker.start_job(uri))

    def request_token(self, uri: str) -> CancelToken:
        """The cancel token of the completion request this task handles (a new one where a
        client reused the id of a request still in flight, whose answer released it)."""
        job = self._read_jobs.get(self.protocol.msg_id)
        return job[1] if job is not None else self.worker.start_job(uri)

    def request_answered(self, msg_id) -> None:
        """The request's job is over, answered or cancelled before its handler started."""
        if (job := self._read_jobs.pop(msg_id, None)) is not None:
            self.worker.finish_job(*job)

    def status(self, state: str, message: str = "", progress: int | None = None) -> None:
        self.state = state
        self.protocol.notify(STATUS, {"state": state, "message": message, "progress": progress,
                                      "latencyMs": self.last_latency_ms,
                                      "mechanisms": self.engine.options.mechanisms_text()})

    def log(self, message: str, kind: lsp.MessageType = lsp.MessageType.Info) -> None:
        self.window_log_message(lsp.LogMessageParams(type=kind, message=message))

    def show_once(self, message: str, kind: lsp.MessageType = lsp.MessageType.Error) -> None:
        """Something the user must act on: logged, and a popup at most once a minute."""
        self.log(message, kind)
        self.notices.show(message)

    def report_fault(self, message: str) -> None:
        """A real fault (the protocol logged its traceback): a rate-limited popup."""
        self.show_once(message)

    def report_server_error(self, error: Exception, source) -> None:
        """pygls' own error reports: one log line (no popup; requests are answered)."""
        log.error("%s", error)

    def start_io(self, stdin=None, stdout=None) -> None:
        run_stdio(self, stdin or sys.stdin.buffer, stdout or sys.stdout.buffer)

    async def shutdown_engine(self) -> None:
        """Cancel this session's jobs and close its worker, then let the Engine stop its
        watchers on the model thread, waiting a bounded time for the forward in progress."""
        self.idle.cancel()
        stopped = self.worker.shutdown(self.engine.shutdown)
        try:
            await asyncio.wait_for(asyncio.shield(stopped), 2.0)
        except asyncio.TimeoutError:
            log.info("shutdown: the model worker did not stop within 2 s")

    def exit_now(self, code: int) -> None:
        """End the process at once with ``code``, not waiting for a forward in progress; a TCP
        session hangs up instead, and ``end_session`` follows as the connection closes."""
        self.worker.cancel_all()
        if self.hang_up is None:
            flush_and_exit(code)
        self.hang_up()

    async def end_session(self) -> None:
        """The client left: its jobs cancelled and its Engine shut down, unless shutdown did."""
        if not self.worker.closed:
            await self.shutdown_engine()

    async def configure(self, settings) -> None:
        """Apply settings (on the worker, behind the work already queued)."""
        if not settings:
            return
        if isinstance(settings, dict) and isinstance(settings.get("inkling"), dict):
            settings = settings["inkling"]
        try:
            await self.worker.run(self.engine.configure, settings)
            self.log("configuration applied")
        except InklingError as exc:
            self.show_once(f"inkling: invalid setting, keeping the previous value: {exc}")

    def submit(self, what: str, fn, *args) -> None:
        """Run an Engine call for a notification; a DocumentError is one log line."""
        self.worker.run(fn, *args).add_done_callback(lambda f: self._submitted(what, f))

    def _submitted(self, what: str, future: asyncio.Future) -> None:
        if future.cancelled():
            return
        exc = future.exception()
        if isinstance(exc, DocumentError):
            message = f"inkling: {what} refused, document kept as it was: {exc}"
            log.warning("%s", message)
            self.log(message, lsp.MessageType.Warning)
        elif exc is not None:
            self.protocol.fault(exc, what)
