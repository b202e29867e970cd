"""One client connection of the soak (evaluation/soak.py) to `inkling serve`: LSP base-protocol
frames over a subprocess's pipes or a TCP socket, every response kept by id with the time it
came. The frames are read raw, not through an LSP client library, so that a response to an id
this connection never sent, or a second response to one id, is seen rather than dropped."""
from __future__ import annotations

import json
import socket
import threading
import time
from typing import BinaryIO, Callable


def framed(body: bytes) -> bytes:
    """``body`` as one LSP base-protocol frame."""
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def read_frames(reader: BinaryIO):
    """The JSON messages of the frames ``reader`` gives, until it ends."""
    while True:
        length = None
        while True:
            line = reader.readline()
            if not line:
                return
            if not line.strip():
                break
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        yield json.loads(reader.read(length))


class Connection:
    def __init__(self, reader: BinaryIO, writer: BinaryIO, close: Callable[[], None]):
        self._reader, self._writer, self._close = reader, writer, close
        self._write_lock = threading.Lock()
        self._changed = threading.Condition()
        self._ids = 0
        self.sent: dict[int, tuple[str, float]] = {}           # id -> (method, time sent)
        self.pending: set[int] = set()                         # sent, not yet answered
        self.responses: dict[int, list[tuple[dict, float]]] = {}   # id -> [(message, time)]
        self.status: dict = {}                                 # the last inkling/status
        self.popups: list[str] = []                            # window/showMessage texts
        self.closed = False                                    # the server's side ended
        threading.Thread(target=self._read, daemon=True, name="soak-reader").start()

    @classmethod
    def over_process(cls, proc) -> "Connection":
        return cls(proc.stdout, proc.stdin, proc.stdin.close)

    @classmethod
    def over_tcp(cls, port: int, timeout_s: float = 120) -> "Connection":
        """Connect to ``127.0.0.1:port``, retrying while the server starts to listen."""
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                sock = socket.create_connection(("127.0.0.1", port), timeout=5)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        sock.settimeout(None)
        stream = sock.makefile("rwb")

        def close() -> None:
            # shutdown first: it ends the reader's blocked read, which holds the stream's lock
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()
        return cls(stream, stream, close)

    # --------------------------------------------------------------- writing
    def _send(self, message: dict) -> None:
        body = json.dumps(message).encode()
        with self._write_lock:
            self._writer.write(framed(body))
            self._writer.flush()

    def request(self, method: str, params) -> int:
        with self._changed:
            self._ids += 1
            msg_id = self._ids
            self.sent[msg_id] = (method, time.monotonic())
            self.pending.add(msg_id)
        self._send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        return msg_id

    def notify(self, method: str, params) -> None:
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

    def close(self) -> None:
        try:
            self._close()
        except OSError:
            pass

    # --------------------------------------------------------------- reading
    def _read(self) -> None:
        try:
            for message in read_frames(self._reader):
                self._take(message)
        except (OSError, ValueError):       # the socket closed under the reader
            pass
        with self._changed:
            self.closed = True
            self._changed.notify_all()

    def _take(self, message: dict) -> None:
        if "method" in message and "id" in message:        # a request of the server's
            self._send({"jsonrpc": "2.0", "id": message["id"], "result": None})
            return
        with self._changed:
            method = message.get("method")
            if method == "inkling/status":
                self.status = message.get("params") or {}
            elif method == "window/showMessage":
                self.popups.append(message["params"]["message"])
            elif method is None:
                self.pending.discard(message.get("id"))
                self.responses.setdefault(message.get("id"), []).append(
                    (message, time.monotonic()))
            self._changed.notify_all()

    def wait_for(self, predicate: Callable[[], bool], timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        with self._changed:
            while not predicate():
                left = deadline - time.monotonic()
                if left <= 0 or self.closed:
                    return predicate()
                self._changed.wait(min(left, 0.5))
        return True

    def wait(self, msg_id: int, timeout_s: float) -> dict | None:
        """The first response to ``msg_id``, or None when none came in time."""
        if self.wait_for(lambda: msg_id in self.responses, timeout_s):
            return self.responses[msg_id][0][0]
        return None

    def in_flight(self) -> int:
        return len(self.pending)
