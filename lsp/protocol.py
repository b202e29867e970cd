"""The JSON-RPC edge of `inkling serve`: pygls' LSP protocol, answering every request once.

Not JSON: Parse error (-32700); not a JSON-RPC 2.0 message: Invalid Request (-32600); params
that fail to structure: Invalid Params (-32602) naming the field, and a notification refused
whole, named in one ``window/logMessage``. Expected errors log one line, faults a traceback.
After ``shutdown`` requests get Invalid Request; ``exit`` ends with 0 after it, else 1."""
from __future__ import annotations

import json
import logging
import os
import sys
from dataclasses import dataclass
from typing import Any

from lsprotocol import types as lsp
from pygls.exceptions import (JsonRpcException, JsonRpcInternalError, JsonRpcInvalidParams,
                              JsonRpcInvalidRequest, JsonRpcMethodNotFound, JsonRpcParseError,
                              JsonRpcRequestCancelled)
from pygls.protocol import (JsonRPCNotification, JsonRPCRequestMessage, JsonRPCResponseMessage,
                            LanguageServerProtocol)
from pygls.protocol.language_server import lsp_method

from inkling.lsp.strict_converter import describe

log = logging.getLogger("inkling.server")


@dataclass
class BadMessage:
    """A message that could not be structured: answered (a request) or named (otherwise)."""
    id: Any
    method: str | None
    error: JsonRpcException

    @property
    def is_request(self) -> bool:
        return self.id is not None


def _usable_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


class InklingProtocol(LanguageServerProtocol):
    """pygls' LSP protocol with a strict, answering edge. Document changes reach the handler
    untouched: pygls' own copy would clamp a bad position in the params, so the Engine keeps
    the documents and refuses such a change."""

    def handle_body(self, body: bytes) -> None:
        """Parse, structure and dispatch one body, or answer the JSON-RPC error saying why not."""
        try:
            message = json.loads(body, object_hook=self.structure_message)
        except (ValueError, RecursionError) as exc:   # JSONDecodeError, UnicodeDecodeError
            self.refuse(BadMessage(None, None, JsonRpcParseError(f"not valid JSON: {exc}")),
                        answer_null=True)
            return
        if isinstance(message, BadMessage):
            self.refuse(message, answer_null=message.error.code == JsonRpcInvalidRequest.CODE)
            return
        if not hasattr(message, "jsonrpc"):            # an array, a number, a bare object
            self.refuse(BadMessage(None, None, JsonRpcInvalidRequest(
                "not a JSON-RPC 2.0 message (an object with \"jsonrpc\": \"2.0\")")),
                answer_null=True)
            return
        self.handle_message(message)

    def structure_message(self, data: dict[str, Any]):
        """json's object hook: structures the object with "jsonrpc"; a failure is a BadMessage."""
        if "jsonrpc" not in data:
            return data
        msg_id, method = data.get("id"), data.get("method")
        if data.get("jsonrpc") != self.VERSION:
            return BadMessage(msg_id if _usable_id(msg_id) else None, None,
                              JsonRpcInvalidRequest('"jsonrpc" must be "2.0"'))
        if "id" in data and not _usable_id(msg_id):
            return BadMessage(None, None, JsonRpcInvalidRequest(
                f"\"id\" must be a string or an integer, got {json.dumps(msg_id)[:40]}"))
        if method is not None and not isinstance(method, str):
            return BadMessage(msg_id, None, JsonRpcInvalidRequest("\"method\" must be a string"))
        if method is None and "result" not in data and "error" not in data:
            return BadMessage(msg_id, None, JsonRpcInvalidRequest("no \"method\""))
        try:
            if method is not None:
                data.setdefault("params", None)        # "params" may be omitted
                generic = self.get_message_type(method)
                if generic is None:
                    generic = JsonRPCRequestMessage if "id" in data else JsonRPCNotification
                return self._converter.structure(data, generic)
            if "error" in data:
                return self._converter.structure(data, lsp.ResponseErrorMessage)
            result_type = self._result_types.pop(msg_id, None) or JsonRPCResponseMessage
            return self._converter.structure(data, result_type)
        except Exception as exc:                      # cattrs' errors, or a hook's
            what = f"{method}: " if method else ""
            return BadMessage(msg_id if method else None, method,
                              JsonRpcInvalidParams(f"{what}{describe(exc)}"))

    def refuse(self, bad: BadMessage, answer_null: bool = False) -> None:
        """Answer a request that could not be read, or name a refused notification."""
        error = bad.error
        if bad.is_request or answer_null:
            log.info("refused %s: %s", bad.method or "a message", error.message)
            self._send_response(bad.id, error=error.to_response_error())
            return
        if bad.method is None:                         # a response we cannot read
            log.info("ignored an unreadable response: %s", error.message)
            return
        text = f"inkling: {bad.method} refused, nothing applied: {error.message}"
        log.warning("%s", text)
        self.notify(lsp.WINDOW_LOG_MESSAGE,
                    lsp.LogMessageParams(type=lsp.MessageType.Warning, message=text))

    def handle_message(self, message) -> None:
        method = getattr(message, "method", None)
        is_request = hasattr(message, "id") and method is not None
        if self._shutdown and method != lsp.EXIT:
            if is_request:
                self._send_response(message.id, error=JsonRpcInvalidRequest(
                    f"{method}: the server is shutting down").to_response_error())
            return
        if method is not None and method != lsp.CANCEL_REQUEST \
                and method not in self.fm.features and method not in self.fm.builtin_features:
            self.unknown(message, method, is_request)
            return
        if is_request:
            self._server.request_read(method, message)     # in message order
        super().handle_message(message)

    def unknown(self, message, method: str, is_request: bool) -> None:
        """A method not served here: a request is answered Method not found, one info line
        (an expected error); a notification is ignored, as the LSP spec says."""
        if not is_request:
            log.debug("ignored the notification %s (not handled here)", method)
            return
        log.info("refused %s: method not found", method)
        self._send_response(message.id, error=JsonRpcMethodNotFound(
            f"Method Not Found: {method}").to_response_error())

    def get_message_type(self, method: str):
        """lsprotocol's params type of ``method``, uncached: pygls' cache is keyed by the
        protocol, so it would keep ended TCP sessions alive."""
        return lsp.METHOD_TO_TYPES.get(method, (None,))[0]

    def get_result_type(self, method: str):
        return lsp.METHOD_TO_TYPES.get(method, (None, None))[1]

    def _handle_cancel_notification(self, msg_id) -> None:
        """$/cancelRequest: cancel the request if it still runs (else the answer crossed it);
        an id no request can have is one info line, and nothing (a notification has no answer)."""
        if not _usable_id(msg_id):
            log.info("refused $/cancelRequest: \"id\" must be a string or an integer, got %s",
                     json.dumps(msg_id)[:40])
            return
        future = self._request_futures.pop(msg_id, None)
        if future is not None:
            future.cancel()

    def _send_handler_result(self, future, *, msg_id) -> None:
        """The one answer to a request: its result, or the error that says why not."""
        self._request_futures.pop(msg_id, None)
        self._server.request_answered(msg_id)
        if future.cancelled():
            log.debug("request %s cancelled", msg_id)
            self._send_response(msg_id, error=JsonRpcRequestCancelled(
                f"request {msg_id} was cancelled").to_response_error())
            return
        exc = future.exception()
        if exc is None:
            self._send_response(msg_id, result=future.result())
        elif isinstance(exc, JsonRpcException):      # expected: bad params, stale, cancelled
            log.info("request %s: %s", msg_id, exc.message)
            self._send_response(msg_id, error=exc.to_response_error())
        else:
            self.fault(exc, f"request {msg_id}")
            self._send_response(msg_id, error=JsonRpcInternalError(
                f"inkling: internal error: {type(exc).__name__}: {exc}").to_response_error())

    def _check_handler_result(self, future) -> None:
        if not future.cancelled() and (exc := future.exception()) is not None:
            self.fault(exc, "a notification")

    def fault(self, exc: BaseException, where: str) -> None:
        """A real fault: the traceback in the log, and a popup (rate-limited by the server)."""
        log.error("internal error in %s", where, exc_info=(type(exc), exc, exc.__traceback__))
        self._server.report_fault(f"inkling: internal error in {where}: "
                                  f"{type(exc).__name__}: {exc} (see the server's log)")

    @lsp_method(lsp.EXIT)
    def lsp_exit(self, *args) -> None:
        """Ends the process now: 0 after shutdown, 1 without (the LSP spec)."""
        self._server.exit_now(0 if self._shutdown else 1)

    @lsp_method(lsp.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(self, params: lsp.DidChangeTextDocumentParams):
        if (handler := self.fm.features.get(lsp.TEXT_DOCUMENT_DID_CHANGE)) is not None:
            yield handler, (params,), None


def flush_and_exit(code: int) -> None:
    """Flush the streams and end the process at once, waiting for no thread."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    logging.shutdown()
    os._exit(code)
