"""One completion request, on the event loop: debounced by the typing cadence when automatic,
then run on the model worker with the cancel token taken when the request was read
(``InklingServer.request_read``), which a newer request, an edit, a close or ``$/cancelRequest``
sets."""
from __future__ import annotations

import asyncio

from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcContentModified, JsonRpcInvalidParams

from inkling.completion.decoding.names import Trigger
from inkling.completion.decoding.steps import Cancelled
from inkling.completion.document import Position
from inkling.completion.engine import Completion
from inkling.completion.errors import DocumentError, InklingError
from inkling.runtime.errors import ModelError

from inkling.lsp import convert
from inkling.lsp.language_server import InklingServer
from inkling.lsp.model_worker import CancelToken


async def complete(ls: InklingServer, uri: str, position: Position,
                   invoked: bool) -> Completion | None:
    """Run one completion; None when a newer request for the document superseded it."""
    ls.stats.requests += 1
    token = ls.request_token(uri)         # taken when the request was read
    try:
        if not invoked:
            o = ls.engine.options.server
            await asyncio.sleep(ls.cadence.delay_s(uri, o.debounce_min_ms,
                                                   o.debounce_max_ms, o.debounce_factor))
        if token.is_cancelled():
            return _overtaken(ls, uri, token)
        return await _run(ls, uri, position, invoked, token)
    except asyncio.CancelledError:        # $/cancelRequest: stop the decoding loop too
        token.cancel()
        ls.stats.cancelled += 1
        raise
    finally:
        ls.idle.schedule()


def _overtaken(ls: InklingServer, uri: str, token: CancelToken) -> None:
    """An overtaken request: empty if superseded, ContentModified if the document changed."""
    ls.stats.cancelled += 1
    if token.reason in ("edited", "closed"):
        raise JsonRpcContentModified(f"{uri} was {token.reason} after this request; "
                                     "ask again at the new position")
    return None


async def _run(ls: InklingServer, uri: str, position: Position, invoked: bool,
               token: CancelToken) -> Completion | None:
    """The Engine's completion on the worker: a DocumentError is -32602 unless the token was set
    first; a model fault answers nothing and shows a popup."""
    ls.status("busy", "completing")
    try:
        result = await ls.worker.run(ls.engine.complete, uri, position, None,
                                     Trigger.INVOKED if invoked else Trigger.AUTOMATIC,
                                     token.is_cancelled)
    except Cancelled:
        ls.status("ready", "cancelled")
        return _overtaken(ls, uri, token)
    except DocumentError as exc:
        ls.status("ready", "")
        if token.is_cancelled():          # an edit, a close or a newer request came first
            return _overtaken(ls, uri, token)
        ls.stats.errors += 1
        raise JsonRpcInvalidParams(str(exc)) from None
    except (ModelError, InklingError) as exc:
        ls.stats.errors += 1
        ls.status("error", str(exc))
        ls.show_once(f"inkling: {exc}")
        return None
    _answered(ls, result)
    return result


def _answered(ls: InklingServer, result: Completion) -> None:
    """Count the answer, keep its metrics and queue ``Engine.settle`` behind it."""
    ls.stats.answered += 1
    ls.last_completion = convert.completion_metrics(result)
    ls.stats.latencies_ms.append(result.latency_ms)
    ls.last_latency_ms = round(result.latency_ms, 1)
    ls.status("ready", f"{len(result.drafts)} draft(s)")
    ls.worker.run_after(ls.engine.settle, lambda future: _settled(ls, future))


def _settled(ls: InklingServer, future: asyncio.Future) -> None:
    """Log a failure of the after-answer work (the next completion runs what is left)."""
    if not future.cancelled() and future.exception() is not None:
        ls.log(f"learning from the last completion failed: {future.exception()}",
               lsp.MessageType.Warning)
