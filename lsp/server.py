"""`inkling serve`: a thin pygls adapter over one Engine.

Handlers read params, submit the Engine call as a job to the model worker (the Engine's
one owner: every call into it runs there, in the order the messages arrived), and convert
the result (lsp/convert.py). The event loop never waits on the model; it owns the server's
own bookkeeping (counters, typing cadence, the per-document cancel tokens). The one thing
it reads of the Engine is ``engine.options``, a value replaced whole by ``configure``.

Every request is answered once: a result, -32602 naming a bad field or position, -32800
after ``$/cancelRequest``, -32801 (ContentModified) when the document was edited or closed
while the request waited or ran, an empty result when a newer request for the same
document superseded it, -32601 for an unknown method (lsp/protocol.py reads the messages).
"""
from __future__ import annotations

import asyncio
import gc
import logging
import uuid

from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcContentModified, JsonRpcInvalidParams
from pygls.lsp.server import LanguageServer

from inkling.runtime.errors import ModelError
from inkling.completion.decoding.steps import Cancelled
from inkling.completion.engine import Engine
from inkling.completion.errors import DocumentError, InklingError
from inkling.completion.prompt.repo_context import uri_path

from inkling.lsp import convert
from inkling.lsp.message_loop import run_stdio, run_tcp
from inkling.lsp.model_worker import CancelToken, ModelWorker
from inkling.lsp.notices import Notices
from inkling.lsp.protocol import InklingProtocol, flush_and_exit
from inkling.lsp.server_stats import ServerStats, drafting_in_use, forward_in_use, threads_in_use
from inkling.lsp.strict_converter import strict_converter
from inkling.lsp.typing_cadence import TypingCadence

log = logging.getLogger("inkling.server")
VERSION = "0.1.0"
STATUS = "inkling/status"
STATS = "inkling/stats"
DOCUMENT = "inkling/document"
LAST_COMPLETION = "inkling/lastCompletion"
IDLE = "inkling/idle"            # the replay's clock: run the idle policy after quietMs


class InklingServer(LanguageServer):
    """The server's state: the Engine, the model worker, counters, typing cadence."""

    def __init__(self, engine: Engine):
        super().__init__("inkling", VERSION, protocol_cls=InklingProtocol,
                         converter_factory=strict_converter)
        self.engine = engine
        self.worker = ModelWorker()
        self.stats = ServerStats()
        self.cadence = TypingCadence()
        self.state = "starting"
        self.last_latency_ms: float | None = None
        self.last_completion: dict | None = None
        self.notices = Notices(lambda message: self.window_show_message(
            lsp.ShowMessageParams(type=lsp.MessageType.Error, message=message)))
        self._idle_timer: asyncio.TimerHandle | None = None

    # ------------------------------------------------------------- messages
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

    # -------------------------------------------------------------- lifecycle
    def start_io(self, stdin=None, stdout=None) -> None:
        import sys
        run_stdio(self, stdin or sys.stdin.buffer, stdout or sys.stdout.buffer)

    def start_tcp(self, host: str, port: int) -> None:
        run_tcp(self, host, port)

    async def shutdown_engine(self) -> None:
        """The shutdown request: cancel every job, let the Engine stop its watchers on its
        own thread (waiting at most 2 s for the forward in progress), then close the
        worker to new work."""
        self.worker.cancel_all()
        if self._idle_timer is not None:
            self._idle_timer.cancel()
        try:
            await asyncio.wait_for(self.worker.run(self.engine.shutdown), 2.0)
        except (asyncio.TimeoutError, RuntimeError):
            log.info("shutdown: the model worker did not stop within 2 s")
        self.worker.shutdown()

    def exit_now(self, code: int) -> None:
        """The exit notification: end the process at once (a forward in progress is not
        waited for), with ``code``."""
        self.worker.cancel_all()
        flush_and_exit(code)

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
        """Run an Engine call for a notification (no answer to wait for); a refusal
        (DocumentError) is one log line naming the culprit."""
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

    # ------------------------------------------------------------- idle work
    def schedule_idle_refresh(self) -> None:
        """After ``cache.idle_refresh_ms`` of quiet, recompute stale cache entries."""
        if self._idle_timer is not None:
            self._idle_timer.cancel()
        delay_ms = self.engine.options.cache.idle_refresh_ms
        if delay_ms and self.engine.model_loaded:
            loop = asyncio.get_running_loop()
            self._idle_timer = loop.call_later(delay_ms / 1000, self._on_idle)

    def _on_idle(self) -> None:
        self._idle_timer = None
        quiet_ms = self.engine.options.cache.idle_refresh_ms     # the timer's delay, passed
        future = self.worker.run(self.engine.idle, quiet_ms)
        future.add_done_callback(self._idle_done)

    def _idle_done(self, future: asyncio.Future) -> None:
        if not future.cancelled() and future.exception() is None and future.result():
            self.log(f"idle refresh recomputed {future.result()} stale cache tokens",
                     lsp.MessageType.Log)

    # ---------------------------------------------------------- model loading
    async def load_model(self) -> None:
        loop = asyncio.get_running_loop()
        token = f"inkling-load-{uuid.uuid4().hex[:8]}"
        progress = await self._begin_progress(token, "inkling: loading model")

        def report(stage: str, fraction: float) -> None:
            pct = round(fraction * 100)
            loop.call_soon_threadsafe(self._report_progress, progress, token, stage, pct)
        self.status("loading", "loading model", 0)
        try:
            runtime = await self.worker.run(self.engine.load_model, report)
        except (ModelError, InklingError) as exc:
            self._end_progress(progress, token, "failed")
            self.status("error", str(exc))
            self.show_once(f"inkling: {exc}")
            return
        self._end_progress(progress, token, "ready")
        used = forward_in_use(self.engine)
        self.log(f"model {runtime.path} loaded on {runtime.device} ({runtime.dtype}), "
                 f"{used['kind']} forward" + (f" ({used['note']})" if used["note"] else ""))
        await self.prepare_drafting()
        # the model, the datastores and the workspace's indexes live as long as the server:
        # out of the collector's oldest generation, whose sweeps over them (a few hundred
        # thousand objects) otherwise paused a completion now and then for about 200 ms
        gc.freeze()
        self.status("ready", f"model {runtime.path.name} ready: "
                    f"{self.engine.options.mechanisms_text()}")

    async def prepare_drafting(self) -> None:
        """What completions search besides the document (the workspace, indexed and
        watched; the datastores), built once by ``Engine.prepare``, with $/progress; a
        step that fails is shown once, the others still run."""
        report, ok = await self._indexing("prepare", "inkling: indexing", self.engine.prepare,
                                          (OSError, InklingError), "indexing failed",
                                          lambda r: "; ".join(r.done) or "nothing to index")
        if not ok:
            return
        for line in report.done:
            self.log(line)
        for step, exc in report.failed:
            self.show_once(f"inkling: {step} not built: {exc}")

    async def _indexing(self, kind: str, title: str, job, errors: tuple, failed: str, summary):
        """Run ``job(progress)`` on the model worker with $/progress; (result, True), or
        (None, False) after showing ``failed`` and the error once."""
        loop = asyncio.get_running_loop()
        token = f"inkling-{kind}-{uuid.uuid4().hex[:8]}"
        progress = await self._begin_progress(token, title)

        def report(stage: str, fraction: float) -> None:
            loop.call_soon_threadsafe(self._report_progress, progress, token, stage,
                                      round(fraction * 100), "indexing")
        try:
            result = await self.worker.run(job, report)
        except errors as exc:
            self._end_progress(progress, token, "failed")
            self.show_once(f"inkling: {failed}: {exc}")
            return None, False
        self._end_progress(progress, token, summary(result))
        return result, True

    async def _begin_progress(self, token: str, title: str) -> bool:
        caps = self.client_capabilities.window
        if not (caps and caps.work_done_progress):
            return False
        try:
            await self.work_done_progress.create_async(token)
        except Exception as exc:   # the client may refuse; progress is optional
            self.log(f"no progress reporting: {exc}", lsp.MessageType.Warning)
            return False
        self.work_done_progress.begin(token, lsp.WorkDoneProgressBegin(
            title=title, percentage=0, cancellable=False))
        return True

    def _report_progress(self, enabled: bool, token: str, stage: str, pct: int,
                         state: str = "loading") -> None:
        if enabled:
            self.work_done_progress.report(token, lsp.WorkDoneProgressReport(
                message=stage, percentage=pct))
        self.status(state, stage, pct)

    def _end_progress(self, enabled: bool, token: str, message: str) -> None:
        if enabled:
            self.work_done_progress.end(token, lsp.WorkDoneProgressEnd(message=message))

    # ------------------------------------------------------------ completion
    async def complete(self, uri: str, position, invoked: bool):
        """Run one completion; None when a newer request for the document superseded it."""
        self.stats.requests += 1
        token = self.worker.start_job(uri)
        try:
            if not invoked:
                o = self.engine.options.server
                await asyncio.sleep(self.cadence.delay_s(uri, o.debounce_min_ms,
                                                         o.debounce_max_ms, o.debounce_factor))
                if token.is_cancelled():
                    return self._overtaken(uri, token)
            return await self._run_completion(uri, position, invoked, token)
        except asyncio.CancelledError:        # $/cancelRequest: stop the decoding loop too
            token.cancel()
            self.stats.cancelled += 1
            raise
        finally:
            self.worker.finish_job(uri, token)
            self.schedule_idle_refresh()

    def _overtaken(self, uri: str, token: CancelToken):
        """A request that something newer overtook: an empty answer when a newer request
        for the document took its place, ContentModified when the document changed."""
        self.stats.cancelled += 1
        if token.reason in ("edited", "closed"):
            raise JsonRpcContentModified(f"{uri} was {token.reason} after this request; "
                                         "ask again at the new position")
        return None

    async def _run_completion(self, uri, position, invoked: bool, token: CancelToken):
        self.status("busy", "completing")
        try:
            result = await self.worker.run(self.engine.complete, uri, position, None,
                                           "invoked" if invoked else "automatic",
                                           token.is_cancelled)
        except Cancelled:
            self.status("ready", "cancelled")
            return self._overtaken(uri, token)
        except DocumentError as exc:
            self.status("ready", "")
            if token.is_cancelled():          # an edit, a close or a newer request came first
                return self._overtaken(uri, token)
            self.stats.errors += 1
            raise JsonRpcInvalidParams(str(exc)) from None
        except (ModelError, InklingError) as exc:
            self.stats.errors += 1
            self.status("error", str(exc))
            self.show_once(f"inkling: {exc}")
            return None
        self.stats.answered += 1
        self.last_completion = convert.completion_metrics(result)
        self.stats.latencies_ms.append(result.latency_ms)
        self.last_latency_ms = round(result.latency_ms, 1)
        self.status("ready", f"{len(result.drafts)} draft(s)")
        self.worker.run_after(self.engine.settle, self._settled)
        return result

    def _settled(self, future: asyncio.Future) -> None:
        """The work a completion left for after its answer is done; a failure there is
        logged (the next completion runs what is left)."""
        if not future.cancelled() and future.exception() is not None:
            self.log(f"learning from the last completion failed: {future.exception()}",
                     lsp.MessageType.Warning)


def _folders(ls: InklingServer, folders: list[str]) -> None:
    ls.submit("workspace folders", setattr, ls.engine, "workspace_folders", folders)


def _uri_param(method: str, params) -> str:
    """The ``uri`` of a custom request's params (plain JSON), or -32602 naming it."""
    uri = params.get("uri") if isinstance(params, dict) else None
    if not isinstance(uri, str):
        raise JsonRpcInvalidParams(f"{method}: params.uri: expected a string "
                                   f"(params {{\"uri\": ...}}), got {params!r:.60}")
    return uri


def build_server(engine: Engine) -> InklingServer:
    server = InklingServer(engine)

    @server.feature(lsp.INITIALIZE)
    async def initialize(ls: InklingServer, params: lsp.InitializeParams):
        await ls.configure(params.initialization_options)
        _folders(ls, [f.uri for f in params.workspace_folders or []])

    @server.feature(lsp.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
    def did_change_folders(ls: InklingServer, params: lsp.DidChangeWorkspaceFoldersParams):
        removed = {f.uri for f in params.event.removed}
        kept = [u for u in ls.engine.workspace_folders if u not in removed]
        _folders(ls, kept + [f.uri for f in params.event.added])

    @server.feature(lsp.INITIALIZED)
    async def initialized(ls: InklingServer, params: lsp.InitializedParams):
        await ls.load_model()

    @server.feature(lsp.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def did_change_configuration(ls: InklingServer,
                                       params: lsp.DidChangeConfigurationParams):
        had_model = ls.engine.options.model
        await ls.configure(params.settings)
        if ls.engine.options.model != had_model:
            await ls.load_model()
        elif ls.engine.model_loaded:
            await ls.prepare_drafting()                # builds only what is missing

    @server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: InklingServer, params: lsp.DidOpenTextDocumentParams):
        d = params.text_document
        ls.worker.cancel_job(d.uri, "edited")          # reopened: a new text
        ls.submit(f"didOpen of {d.uri}", ls.engine.open, d.uri, d.text, d.version,
                  d.language_id)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: InklingServer, params: lsp.DidChangeTextDocumentParams):
        uri = params.text_document.uri
        ls.cadence.keystroke(uri)
        ls.worker.cancel_job(uri, "edited")            # its position may no longer exist
        ls.schedule_idle_refresh()
        ls.submit(f"didChange of {uri} (version {params.text_document.version})",
                  ls.engine.apply_change, uri, convert.changes(params.content_changes),
                  params.text_document.version)

    @server.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: InklingServer, params: lsp.DidSaveTextDocumentParams):
        if params.text is not None:
            uri = params.text_document.uri
            ls.worker.cancel_job(uri, "edited")
            ls.submit(f"didSave of {uri}", ls.engine.apply_change, uri, convert.changes(
                [lsp.TextDocumentContentChangeWholeDocument(text=params.text)]))

    @server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: InklingServer, params: lsp.DidCloseTextDocumentParams):
        uri = params.text_document.uri
        ls.cadence.forget(uri)
        ls.worker.cancel_job(uri, "closed")
        ls.submit(f"didClose of {uri}", ls.engine.close, uri)

    @server.feature(lsp.TEXT_DOCUMENT_INLINE_COMPLETION, lsp.InlineCompletionOptions())
    async def inline_completion(ls: InklingServer, params: lsp.InlineCompletionParams):
        invoked = params.context.trigger_kind == lsp.InlineCompletionTriggerKind.Invoked
        result = await ls.complete(params.text_document.uri, convert.position(params.position),
                                   invoked)
        return None if result is None else convert.inline_items(result)

    @server.feature(lsp.TEXT_DOCUMENT_COMPLETION, lsp.CompletionOptions(
        trigger_characters=[".", "(", " "], resolve_provider=False))
    async def completion(ls: InklingServer, params: lsp.CompletionParams):
        result = await ls.complete(params.text_document.uri, convert.position(params.position),
                                   invoked=True)
        return None if result is None else convert.completion_items(result)

    @server.command(convert.ACCEPT_COMMAND)
    async def accept(ls: InklingServer, *args):
        if not args or not isinstance(args[0], str):
            raise JsonRpcInvalidParams(f"{convert.ACCEPT_COMMAND} needs a draft id, got {args!r}")
        try:
            draft = await ls.worker.run(ls.engine.accept, args[0])
        except DocumentError as exc:
            raise JsonRpcInvalidParams(str(exc)) from None
        ls.stats.accepted += 1
        return {"accepted": draft.id, "chars": len(draft.text)}

    @server.feature(STATS)
    async def stats(ls: InklingServer, params=None):
        def engine_stats():
            return {"documents": len(ls.engine.documents.uris()),
                    "refreshes": ls.engine.stats.refreshes, "learnt": ls.engine.stats.learnt,
                    "undrafted": ls.engine.stats.undrafted,   # drafting idled for them
                    "forward": forward_in_use(ls.engine),   # None until the model loads
                    "drafting": drafting_in_use(ls.engine),   # the mode that runs, and why
                    "threads": threads_in_use(ls.engine)}     # and on a GPU
        return {**ls.stats.as_dict(), "state": ls.state, **await ls.worker.run(engine_stats),
                "cache_mode": ls.engine.options.cache.mode,
                "mechanisms": ls.engine.options.mechanisms(),     # which of inkling's ideas run
                "options": ls.engine.options.as_dict()}      # the options in force

    @server.feature(lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def did_change_watched_files(ls: InklingServer, params: lsp.DidChangeWatchedFilesParams):
        """Files the client saw change on disk: indexed now (the server's own watcher
        sees them too, later)."""
        for change in params.changes:
            path = uri_path(change.uri)
            if path is not None:
                ls.submit(f"file change of {change.uri}", ls.engine.workspace_file_changed,
                          str(path))

    @server.feature(IDLE)
    async def idle(ls: InklingServer, params=None):
        """The idle policy (``Engine.idle``) after ``quietMs`` of simulated quiet: what
        ``inkling replay --via-lsp`` sends where its clock has the typist pause."""
        quiet = params.get("quietMs") if isinstance(params, dict) else \
            getattr(params, "quietMs", None)
        if not isinstance(quiet, (int, float)) or isinstance(quiet, bool):
            raise JsonRpcInvalidParams(f"{IDLE}: params.quietMs: expected a number of "
                                       f"milliseconds, got {params!r:.60}")
        return {"refreshed": await ls.worker.run(ls.engine.idle, quiet)}

    @server.feature(DOCUMENT)
    async def document(ls: InklingServer, params=None):
        """The server's copy of a document: version and SHA-256 (to check sync)."""
        uri = _uri_param(DOCUMENT, params)

        def summary():
            doc = ls.engine.document(uri)
            return {"uri": uri, "version": doc.version, "length": len(doc.text),
                    "sha256": ls.engine.document_sha256(uri)}
        try:
            return await ls.worker.run(summary)
        except DocumentError as exc:
            raise JsonRpcInvalidParams(str(exc)) from None

    @server.feature(LAST_COMPLETION)
    def last_completion(ls: InklingServer, params=None):
        """What the Engine measured for the last answered completion (for replay via LSP)."""
        return ls.last_completion

    @server.feature(lsp.SHUTDOWN)
    async def shutdown(ls: InklingServer, params=None):
        await ls.shutdown_engine()

    return server


def serve(engine: Engine, tcp_port: int | None = None, host: str = "127.0.0.1") -> None:
    if logging.getLogger().getEffectiveLevel() > logging.DEBUG:
        # pygls' own lines (an unknown notification, a cancel after the answer) are
        # expected traffic: the protocol logs what matters, one line each
        logging.getLogger("pygls").setLevel(logging.ERROR)
    server = build_server(engine)
    if tcp_port is None:
        server.start_io()
    else:
        if host not in ("127.0.0.1", "localhost", "::1"):
            log.warning("listening on %s:%d, which is not loopback: anyone who can reach it "
                        "can read the code sent to it", host, tcp_port)
        server.start_tcp(host, tcp_port)
    # the client closed the stream without exit: end as exit would (no thread waited for)
    server.exit_now(0 if server.protocol._shutdown else 1)
