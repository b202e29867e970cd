"""`inkling serve`: a thin pygls adapter over one Engine a session, as module-level handlers.

Each handler submits its Engine call as a job to the model worker, the Engine's one owner, in
message order, and converts the result (lsp/convert.py). Every request is answered once: a
result, -32602, -32800 after a cancel, -32801 when the document changed meanwhile, or empty when
a newer request superseded it."""
from __future__ import annotations

import logging
from typing import Any, Callable

from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcInvalidParams

from inkling.completion.engine import Engine
from inkling.completion.errors import DocumentError
from inkling.completion.options import InklingOptions
from inkling.completion.prompt.repo_context import uri_path

from inkling.lsp import convert
from inkling.lsp.completing import complete
from inkling.lsp.language_server import SESSIONS, InklingServer, ended_quietly
from inkling.lsp.message_loop import run_tcp
from inkling.lsp.model_loading import load_model, prepare_drafting, time_drafting
from inkling.lsp.model_worker import ModelThread
from inkling.lsp.protocol import flush_and_exit
from inkling.lsp.server_stats import (drafting_in_use, forward_in_use, model_in_use,
                                      threads_in_use)
from inkling.lsp.shared_runtimes import SharedRuntimes

log = logging.getLogger("inkling.server")
STATS = "inkling/stats"
DOCUMENT = "inkling/document"
LAST_COMPLETION = "inkling/lastCompletion"
IDLE = "inkling/idle"            # the replay's clock: run the idle policy after quietMs

FEATURES: list[tuple[str, Any, Callable]] = []     # (method, options, handler), in order


def feature(method: str, options: Any = None):
    """Make the function below the handler of ``method`` in every server built."""
    def register(handler: Callable) -> Callable:
        FEATURES.append((method, options, handler))
        return handler
    return register


def build_server(engine: Engine, thread: ModelThread | None = None) -> InklingServer:
    server = InklingServer(engine, thread)
    for method, options, handler in FEATURES:
        server.feature(method, options)(ended_quietly(handler))
    server.command(convert.ACCEPT_COMMAND)(ended_quietly(accept))
    return server


def serve(options: InklingOptions, tcp_port: int | None = None, host: str = "127.0.0.1") -> None:
    """One session over stdio; over TCP a session a connection, until SIGTERM or SIGINT."""
    if logging.getLogger().getEffectiveLevel() > logging.DEBUG:
        # pygls logs expected traffic; the protocol logs what matters
        logging.getLogger("pygls").setLevel(logging.ERROR)
    if tcp_port is None:
        server = build_server(Engine(options))
        server.start_io()
        # the client closed the stream without exit: end as exit would (no thread waited for)
        server.exit_now(0 if server.protocol._shutdown else 1)
        return
    options.validate()                        # refused before listening, not per connection
    # the sessions' Engines and models have one owner, the model thread
    thread, runtimes = ModelThread(), SharedRuntimes()
    run_tcp(lambda: build_server(Engine(options, load=runtimes.load), thread), host, tcp_port)
    flush_and_exit(0)


@feature(lsp.INITIALIZE)
async def initialize(ls: InklingServer, params: lsp.InitializeParams):
    await ls.configure(params.initialization_options)
    _folders(ls, [f.uri for f in params.workspace_folders or []])


@feature(lsp.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
def did_change_folders(ls: InklingServer, params: lsp.DidChangeWorkspaceFoldersParams):
    removed = {f.uri for f in params.event.removed}
    kept = [u for u in ls.engine.workspace_folders if u not in removed]
    _folders(ls, kept + [f.uri for f in params.event.added])


@feature(lsp.INITIALIZED)
async def initialized(ls: InklingServer, params: lsp.InitializedParams):
    await load_model(ls)


@feature(lsp.WORKSPACE_DID_CHANGE_CONFIGURATION)
async def did_change_configuration(ls: InklingServer, params: lsp.DidChangeConfigurationParams):
    had_model = ls.engine.options.model
    await ls.configure(params.settings)
    if ls.engine.options.model != had_model:
        await load_model(ls)
    elif ls.engine.model_loaded:
        await prepare_drafting(ls)                     # builds only what is missing
        await time_drafting(ls)                        # auto asked for now: timed once


@feature(lsp.TEXT_DOCUMENT_DID_OPEN)
def did_open(ls: InklingServer, params: lsp.DidOpenTextDocumentParams):
    d = params.text_document
    ls.worker.cancel_job(d.uri, "edited")              # reopened: a new text
    ls.submit(f"didOpen of {d.uri}", ls.engine.open, d.uri, d.text, d.version, d.language_id)


@feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
def did_change(ls: InklingServer, params: lsp.DidChangeTextDocumentParams):
    uri = params.text_document.uri
    ls.cadence.keystroke(uri)
    ls.worker.cancel_job(uri, "edited")                # its position may no longer exist
    ls.idle.schedule()
    ls.submit(f"didChange of {uri} (version {params.text_document.version})",
              ls.engine.apply_change, uri, convert.changes(params.content_changes),
              params.text_document.version)


@feature(lsp.TEXT_DOCUMENT_DID_SAVE)
def did_save(ls: InklingServer, params: lsp.DidSaveTextDocumentParams):
    if params.text is not None:
        uri = params.text_document.uri
        ls.worker.cancel_job(uri, "edited")
        ls.submit(f"didSave of {uri}", ls.engine.apply_change, uri, convert.changes(
            [lsp.TextDocumentContentChangeWholeDocument(text=params.text)]))


@feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
def did_close(ls: InklingServer, params: lsp.DidCloseTextDocumentParams):
    uri = params.text_document.uri
    ls.cadence.forget(uri)
    ls.worker.cancel_job(uri, "closed")
    ls.submit(f"didClose of {uri}", ls.engine.close, uri)


@feature(lsp.TEXT_DOCUMENT_INLINE_COMPLETION, lsp.InlineCompletionOptions())
async def inline_completion(ls: InklingServer, params: lsp.InlineCompletionParams):
    invoked = params.context.trigger_kind == lsp.InlineCompletionTriggerKind.Invoked
    result = await complete(ls, params.text_document.uri, convert.position(params.position),
                            invoked)
    return None if result is None else convert.inline_items(result)


@feature(lsp.TEXT_DOCUMENT_COMPLETION, lsp.CompletionOptions(
    trigger_characters=[".", "(", " "], resolve_provider=False))
async def completion(ls: InklingServer, params: lsp.CompletionParams):
    result = await complete(ls, params.text_document.uri, convert.position(params.position),
                            invoked=True)
    return None if result is None else convert.completion_items(result)


async def accept(ls: InklingServer, *args):
    """The command an offered draft carries (convert.ACCEPT_COMMAND): the person took it."""
    if not args or not isinstance(args[0], str):
        raise JsonRpcInvalidParams(f"{convert.ACCEPT_COMMAND} needs a draft id, got {args!r}")
    try:
        draft = await ls.worker.run(ls.engine.accept, args[0])
    except DocumentError as exc:
        raise JsonRpcInvalidParams(str(exc)) from None
    ls.stats.accepted += 1
    return {"accepted": draft.id, "chars": len(draft.text)}


@feature(STATS)
async def stats(ls: InklingServer, params=None):
    return {**ls.stats.as_dict(), "state": ls.state,
            "sessions": len(SESSIONS),            # alive in the process: ended ones are freed
            **await ls.worker.run(_engine_stats, ls.engine),
            "cache_mode": ls.engine.options.cache.mode,
            "mechanisms": ls.engine.options.mechanisms(),     # which of inkling's ideas run
            "options": ls.engine.options.as_dict()}      # the options in force


@feature(lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES)
def did_change_watched_files(ls: InklingServer, params: lsp.DidChangeWatchedFilesParams):
    """Index files the client saw change on disk now (the server's watcher sees them later)."""
    for change in params.changes:
        path = uri_path(change.uri)
        if path is not None:
            ls.submit(f"file change of {change.uri}", ls.engine.workspace_file_changed,
                      str(path))


@feature(IDLE)
async def idle(ls: InklingServer, params=None):
    """Run ``Engine.idle`` after ``quietMs`` of the replay clock's quiet (``--via-lsp``)."""
    return {"refreshed": await ls.worker.run(ls.engine.idle, _quiet_ms(params))}


@feature(DOCUMENT)
async def document(ls: InklingServer, params=None):
    """The server's copy of a document: version and SHA-256 (to check sync)."""
    uri = _uri_param(DOCUMENT, params)
    try:
        return await ls.worker.run(_document_summary, ls.engine, uri)
    except DocumentError as exc:
        raise JsonRpcInvalidParams(str(exc)) from None


@feature(LAST_COMPLETION)
def last_completion(ls: InklingServer, params=None):
    """What the Engine measured for the last answered completion (for replay via LSP)."""
    return ls.last_completion


@feature(lsp.SHUTDOWN)
async def shutdown(ls: InklingServer, params=None):
    await ls.shutdown_engine()


def _folders(ls: InklingServer, folders: list[str]) -> None:
    ls.submit("workspace folders", setattr, ls.engine, "workspace_folders", folders)


def _engine_stats(engine: Engine) -> dict:
    """What ``inkling/stats`` says of the Engine (a job on the model worker)."""
    return {"documents": len(engine.documents.uris()),
            "refreshes": engine.stats.refreshes, "learnt": engine.stats.learnt,
            "undrafted": engine.stats.undrafted,   # drafting idled for them
            "model": model_in_use(engine),         # what the load chose; None until it loads
            "forward": forward_in_use(engine),     # None until the model loads
            "drafting": drafting_in_use(engine),   # the mode that runs, and why
            "threads": threads_in_use(engine),     # and on a GPU
            "workspace_folders": list(engine.workspace_folders)}   # what the analysis indexes


def _document_summary(engine: Engine, uri: str) -> dict:
    """The Engine's copy of ``uri`` (a job on the model worker); DocumentError unknown."""
    doc = engine.document(uri)
    return {"uri": uri, "version": doc.version, "length": len(doc.text),
            "sha256": engine.document_sha256(uri)}


def _uri_param(method: str, params) -> str:
    """The ``uri`` of a custom request's params (plain JSON), or -32602 naming it."""
    uri = params.get("uri") if isinstance(params, dict) else None
    if not isinstance(uri, str):
        raise JsonRpcInvalidParams(f"{method}: params.uri: expected a string "
                                   f"(params {{\"uri\": ...}}), got {params!r:.60}")
    return uri


def _quiet_ms(params) -> float:
    """``quietMs`` of ``inkling/idle``'s params (plain JSON), or -32602 naming it."""
    quiet = params.get("quietMs") if isinstance(params, dict) else \
        getattr(params, "quietMs", None)
    if not isinstance(quiet, (int, float)) or isinstance(quiet, bool):
        raise JsonRpcInvalidParams(f"{IDLE}: params.quietMs: expected a number of "
                                   f"milliseconds, got {params!r:.60}")
    return quiet
