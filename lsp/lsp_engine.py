"""An Engine stand-in that drives `inkling serve` through a real LSP client on its own event
loop thread, so `inkling replay --via-lsp` measures what the protocol adds; it mirrors each
document for the replay's metrics."""
from __future__ import annotations

import asyncio
import sys
import threading
import time
from dataclasses import asdict
from pathlib import Path

from lsprotocol import types as lsp
from pygls.lsp.client import LanguageClient

from inkling.completion.decoding.names import Trigger
from inkling.completion.document import Document, Position, TextChange
from inkling.completion.engine import Completion, Draft
from inkling.completion.errors import DocumentError, InklingError
from inkling.completion.options import InklingOptions
from inkling.completion.result import GuardCut

from inkling.lsp.convert import ACCEPT_COMMAND       # the command an inline item runs when taken
from inkling.lsp.model_loading import TIMING_FAILED


class LspEngine:
    def __init__(self, options: InklingOptions, root_uri: str, timeout_s: float = 600):
        self.options = options
        self._folders = [root_uri]
        self.timeout_s = timeout_s
        self._docs: dict[str, Document] = {}
        self._drafts: dict[str, Draft] = {}       # the last completion's drafts, by server id
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True,
                                        name="inkling-lsp-client")
        self._thread.start()
        self.client = LanguageClient("inkling-replay", "1")
        self.status: dict = {}

        self.messages: list[str] = []
        self.overhead_ms: list[float] = []      # client wall time minus the Engine's latency

        @self.client.feature("inkling/status")
        def on_status(params):
            self.status = params._asdict() if hasattr(params, "_asdict") else dict(params)

        @self.client.feature(lsp.WINDOW_LOG_MESSAGE)
        def on_log(params: lsp.LogMessageParams):
            self.messages.append(params.message)

        @self.client.feature(lsp.WINDOW_SHOW_MESSAGE)
        def on_show(params: lsp.ShowMessageParams):
            self.messages.append(params.message)
        self._call(self._start(root_uri))

    def _call(self, coro):
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(self.timeout_s)

    async def _start(self, root_uri: str) -> None:
        await self.client.start_io(sys.executable, "-m", "inkling.cli.main", "serve")
        settings = asdict(self.options)
        settings["server"].update(debounce_min_ms=0, debounce_max_ms=0)   # no waiting here
        await self.client.initialize_async(lsp.InitializeParams(
            capabilities=lsp.ClientCapabilities(),
            workspace_folders=[lsp.WorkspaceFolder(uri=root_uri, name="replay")],
            initialization_options=settings))
        self.client.initialized(lsp.InitializedParams())
        while self.status.get("state") not in ("ready", "error"):
            await asyncio.sleep(0.02)
        if self.status.get("state") == "error":
            raise InklingError(f"inkling serve: {self.status.get('message')}")
        await self._drafting_decided()

    async def _drafting_decided(self) -> None:
        """Wait out drafting's first timing, which the server runs once ready, so that the
        replay's completions draft from the first as an in-process replay's do."""
        while not any(m.startswith(TIMING_FAILED) for m in self.messages):
            stats = await self.client.protocol.send_request_async("inkling/stats", {})
            model = _plain(stats).get("model")
            if model is None or _plain(model).get("drafting_state") != "not measured yet":
                return
            await asyncio.sleep(0.05)

    def shutdown(self) -> None:
        async def stop():
            await self.client.shutdown_async(None)
            self.client.exit(None)
            await self.client.stop()
        try:
            self._call(stop())
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)

    def document(self, uri: str) -> Document:
        try:
            return self._docs[uri]
        except KeyError:
            raise DocumentError(f"unknown document {uri} (it was never opened, or was closed)") \
                from None

    def stats(self) -> dict:
        """The server's ``inkling/stats``."""
        async def ask():
            return await self.client.protocol.send_request_async("inkling/stats", {})
        found = self._call(ask())
        return found._asdict() if hasattr(found, "_asdict") else dict(found)

    def document_sha256(self, uri: str) -> str:
        """The SHA-256 of the *server's* copy."""
        async def ask():
            return await self.client.protocol.send_request_async("inkling/document", {"uri": uri})
        return self._call(ask()).sha256

    def open(self, uri: str, text: str, version: int = 0, language_id: str = "python") -> None:
        self._docs[uri] = Document(uri, text, version, language_id)
        self._loop.call_soon_threadsafe(self.client.text_document_did_open,
                                        lsp.DidOpenTextDocumentParams(text_document=lsp.TextDocumentItem(
                                            uri=uri, language_id=language_id, version=version,
                                            text=text)))

    def apply_change(self, uri: str, changes: list[TextChange], version: int | None = None) -> None:
        self.document(uri).apply(changes, version)       # refuses a bad change, as the server
        events = [lsp.TextDocumentContentChangeWholeDocument(text=c.text) if c.range is None else
                  lsp.TextDocumentContentChangePartial(text=c.text, range=_range(c.range))
                  for c in changes]
        self._loop.call_soon_threadsafe(self.client.text_document_did_change,
                                        lsp.DidChangeTextDocumentParams(
                                            text_document=lsp.VersionedTextDocumentIdentifier(
                                                uri=uri, version=version or 0),
                                            content_changes=events))

    def close(self, uri: str) -> None:
        self.document(uri)
        del self._docs[uri]
        self._loop.call_soon_threadsafe(self.client.text_document_did_close,
                                        lsp.DidCloseTextDocumentParams(
                                            text_document=lsp.TextDocumentIdentifier(uri=uri)))

    def settle(self) -> None:
        """Nothing to do: the server runs ``Engine.settle`` itself after each answer."""

    def complete(self, uri: str, position: Position, k: int | None = None,
                 trigger: Trigger = Trigger.AUTOMATIC) -> Completion:
        kind = (lsp.InlineCompletionTriggerKind.Invoked if trigger == Trigger.INVOKED
                else lsp.InlineCompletionTriggerKind.Automatic)
        params = lsp.InlineCompletionParams(
            text_document=lsp.TextDocumentIdentifier(uri=uri),
            position=lsp.Position(line=position.line, character=position.character),
            context=lsp.InlineCompletionContext(trigger_kind=kind))

        async def ask():
            t0 = time.perf_counter()
            items = await self.client.text_document_inline_completion_async(params)
            latency = (time.perf_counter() - t0) * 1000
            metrics = await self.client.protocol.send_request_async("inkling/lastCompletion", {})
            return items, latency, metrics
        try:
            items, latency, m = self._call(ask())
        except Exception as exc:                          # an error answer names its culprit
            raise DocumentError(str(exc)) from None
        if m is None:
            raise DocumentError(f"inkling serve answered no completion for {uri}: "
                                f"{self.messages[-1] if self.messages else 'no reason given'}")
        self.overhead_ms.append(latency - m.latencyMs)
        drafts = _drafts(list(m.drafts), items)
        self._drafts = {d.id: d for d in drafts}
        return Completion(uri, position, drafts, trigger,
                          first_token_ms=m.firstTokenMs, latency_ms=latency,
                          model_ms=m.modelMs, forwards=m.forwards, tokens=m.tokens,
                          prefill_tokens=m.prefillTokens, reused_tokens=m.reusedTokens,
                          stale_tokens=m.staleTokens, refreshed=m.refreshed,
                          draft_ms=tuple(m.draftMs),
                          context_tokens=getattr(m, "contextTokens", 0),
                          context_text=getattr(m, "contextText", ""), asked=m.asked,
                          guard=GuardCut(m.guardCut, m.guardEmptied))

    def accept(self, draft_id: str) -> Draft:
        """Take a draft by running its inline item's command, as an editor does."""
        params = lsp.ExecuteCommandParams(command=ACCEPT_COMMAND, arguments=[draft_id])
        try:
            self._call(self.client.workspace_execute_command_async(params))
        except Exception as exc:                          # the server names the draft
            raise DocumentError(str(exc)) from None
        return self._drafts.get(draft_id) or Draft(draft_id, "", 0.0, 0)

    @property
    def workspace_folders(self) -> list[str]:
        return self._folders

    @workspace_folders.setter
    def workspace_folders(self, folders: list[str]) -> None:
        """Send ``workspace/didChangeWorkspaceFolders`` for the folders added and removed."""
        old, new = self._folders, list(folders)
        event = lsp.WorkspaceFoldersChangeEvent(
            added=[lsp.WorkspaceFolder(uri=u, name="replay") for u in new if u not in old],
            removed=[lsp.WorkspaceFolder(uri=u, name="replay") for u in old if u not in new])
        self._folders = new
        self._loop.call_soon_threadsafe(self.client.workspace_did_change_workspace_folders,
                                        lsp.DidChangeWorkspaceFoldersParams(event=event))

    def workspace_file_changed(self, path: str) -> None:
        """Send ``workspace/didChangeWatchedFiles`` for ``path``, as a watching editor does."""
        params = lsp.DidChangeWatchedFilesParams(changes=[lsp.FileEvent(
            uri=Path(path).resolve().as_uri(), type=lsp.FileChangeType.Changed)])
        self._loop.call_soon_threadsafe(self.client.workspace_did_change_watched_files, params)

    def idle(self, quiet_ms: float) -> int:
        """The server's idle policy after ``quiet_ms`` of the replay clock's quiet."""
        if not quiet_ms:
            return 0
        async def ask():
            return await self.client.protocol.send_request_async("inkling/idle",
                                                                 {"quietMs": quiet_ms})
        answer = self._call(ask())
        return answer.refreshed if hasattr(answer, "refreshed") else answer["refreshed"]


def _plain(found) -> dict:
    """A JSON object the client gave back (a named tuple, or a dict) as a dict."""
    return found._asdict() if hasattr(found, "_asdict") else dict(found)


def _drafts(texts: list[str], items) -> list[Draft]:
    """The drafts of ``inkling/lastCompletion``, best first, with their inline items' accept
    ids (an empty draft has no item)."""
    if isinstance(items, lsp.InlineCompletionList):
        items = items.items
    items = list(items or [])
    ids = iter((item.insert_text, item.command.arguments[0] if item.command else None)
               for item in items)
    out = []
    for i, text in enumerate(texts):
        draft_id = f"lsp-unoffered-{i}"
        if text:
            shown, offered = next(ids, (None, None))
            if shown == text and isinstance(offered, str):
                draft_id = offered
        out.append(Draft(draft_id, text, 0.0, 0))
    return out


def _range(r):
    return lsp.Range(start=lsp.Position(line=r.start.line, character=r.start.character),
                     end=lsp.Position(line=r.end.line, character=r.end.character))
