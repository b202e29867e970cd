"""The transport loop: LSP base-protocol frames in, every body to ``handle_body``, which answers
it; a frame with no usable ``Content-Length`` is skipped to the next blank line."""
from __future__ import annotations

import asyncio
import gc
import logging
import os
import re
import signal
import socket
import threading
from typing import Callable

from pygls.io_ import StdinAsyncReader, StdoutWriter

from inkling.completion.errors import InklingError

log = logging.getLogger("inkling.server")
_CONTENT_LENGTH = re.compile(rb"^content-length:\s*(\d+)\s*$", re.IGNORECASE)
MAX_BODY = 64 << 20          # bytes: a longer frame is refused (no document is that large)


async def read_messages(reader, protocol, stop: threading.Event) -> None:
    """Read frames until the stream closes; ``reader`` has ``readline`` and ``readexactly``."""
    length: int | None = None
    while not stop.is_set():
        header = await reader.readline()
        if not header:
            return                                   # the client closed the stream
        if header.strip():
            m = _CONTENT_LENGTH.match(header.strip())
            if m:
                length = int(m.group(1))
            continue
        if length is None:                           # a blank line ends headers we could not use
            log.info("skipped a frame without a Content-Length header")
            continue
        if length > MAX_BODY:
            log.warning("a frame of %d bytes is over the %d byte limit; the stream cannot "
                        "be read past it", length, MAX_BODY)
            return
        size, length = length, None
        try:
            body = await reader.readexactly(size) if size else b""
        except asyncio.IncompleteReadError:
            return
        if len(body) < size:                         # the stream closed inside the frame
            return
        try:
            protocol.handle_body(body)
        except Exception:                            # a fault of ours: logged, the loop goes on
            log.exception("internal error while handling a message")


def run_stdio(server, stdin, stdout) -> None:
    """Serve over stdio until the client closes stdin or sends exit."""
    server._stop_event = threading.Event()
    server.protocol.set_writer(StdoutWriter(stdout))
    reader = StdinAsyncReader(stdin, server.thread_pool)
    try:
        asyncio.run(read_messages(reader, server.protocol, server._stop_event))
    except (KeyboardInterrupt, BrokenPipeError):
        pass


def run_tcp(new_session: Callable[[], object], host: str, port: int) -> None:
    """Listen on ``host:port`` until SIGTERM or SIGINT; each connection is a session of its own
    (``new_session()``, a server), answered on its own socket and ended when its client sends
    exit or disconnects. ListenError naming the address when it cannot listen."""
    async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        server, stop = new_session(), threading.Event()
        server.protocol.set_writer(writer)
        server.hang_up = lambda: (stop.set(), writer.close())
        peer = writer.get_extra_info("peername")
        log.info("session from %s opened", peer)
        await _session(server, reader, writer, stop)
        log.info("session from %s ended", peer)
        del server                               # nothing else holds the ended session
        _collect_frozen()

    async def main() -> None:
        stop = asyncio.Event()
        for signum in (signal.SIGTERM, signal.SIGINT):
            asyncio.get_running_loop().add_signal_handler(signum, stop.set)
        listener = await _listen(connection, host, port)
        await stop.wait()
        listener.close()

    # not asyncio.run: the sessions' tasks are left as they are, not cancelled, for the
    # process ends with them (the caller exits at once)
    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(main())
    except KeyboardInterrupt:
        pass
    except ListenError:
        # no session began: the loop and its signal handlers go now, here in the main thread,
        # not in a finalizer at exit that prints a traceback after the error's one line
        loop.close()
        raise


async def _session(server, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                   stop: threading.Event) -> None:
    """Serve one connection until exit or the client goes, then end its session."""
    try:
        await read_messages(reader, server.protocol, stop)
    except ConnectionError as exc:    # reset mid-stream: the client is gone all the same
        log.info("connection lost: %s", exc)
    writer.close()
    await server.end_session()


def _collect_frozen() -> None:
    """Free what an ended session held: each model load freezes the heap (model_loading.py),
    which keeps the session's reference cycles from the collector until unfrozen; what is
    left is frozen again."""
    gc.unfreeze()
    gc.collect()
    gc.freeze()


class ListenError(InklingError):
    """The address of ``inkling serve --tcp`` cannot be listened on (in use, not this host's)."""


async def _listen(connection, host: str, port: int) -> asyncio.Server:
    try:
        listener = await asyncio.start_server(connection, host, port)
    except OSError as exc:          # the OS's reason alone, not asyncio's longer sentence
        reason = exc.strerror if isinstance(exc, socket.gaierror) or not exc.errno \
            else os.strerror(exc.errno)
        raise ListenError(f"cannot listen on {host}:{port}: {str(reason or exc).lower()}") \
            from None
    if host not in ("127.0.0.1", "localhost", "::1"):
        log.warning("listening on %s:%d, which is not loopback: anyone who can reach it "
                    "can read the code sent to it", host, port)
    return listener
