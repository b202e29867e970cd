"""The transport loop: LSP base-protocol frames in, every body to ``handle_body``, which answers
it; a frame with no usable ``Content-Length`` is skipped to the next blank line."""
from __future__ import annotations

import asyncio
import logging
import re
import threading

from pygls.io_ import StdinAsyncReader, StdoutWriter

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


def run_tcp(server, host: str, port: int) -> None:
    """Serve the first client on ``host:port`` until it disconnects or sends exit."""
    server._stop_event = stop = threading.Event()

    async def main() -> None:
        done = asyncio.get_running_loop().create_future()

        async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
            server.protocol.set_writer(writer)
            try:
                await read_messages(reader, server.protocol, stop)
            finally:
                if not done.done():
                    done.set_result(None)

        listener = await asyncio.start_server(connection, host, port)
        async with listener:
            await done

    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass
