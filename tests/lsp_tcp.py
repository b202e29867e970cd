"""The real `inkling serve --tcp PORT` as a subprocess, and raw LSP clients over sockets to
it: each client records the frames its own connection receives (responses by id,
notifications), so a test sees which connection got which answer."""
from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time

from inkling.evaluation.soak_wire import framed, read_frames

SERVER = [sys.executable, "-m", "inkling.cli.main", "serve"]


def free_port() -> int:
    """A loopback port nothing listens on (the kernel's pick, released at once)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class TcpServer:
    """`inkling serve --tcp PORT ...`, with its stderr kept; up once a client can connect."""

    def __init__(self, *args: str, port: int | None = None, wait: bool = True):
        self.port = port or free_port()
        self.proc = subprocess.Popen(SERVER + ["--tcp", str(self.port), *args],
                                     stdin=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.stderr: list[str] = []
        self._stderr = threading.Thread(target=self._read_stderr, daemon=True)
        self._stderr.start()
        if wait:
            self.wait_listening()

    def _read_stderr(self) -> None:
        for line in self.proc.stderr:
            self.stderr.append(line.decode("utf-8", "replace"))

    def wait_listening(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, f"the server ended: {''.join(self.stderr)}"
            try:
                socket.create_connection(("127.0.0.1", self.port), 1).close()
                return
            except OSError:
                time.sleep(0.1)
        raise AssertionError(f"nothing listens on port {self.port} after {timeout} s")

    def ended(self, timeout: float) -> int:
        """The exit code of a server that ends by itself, its stderr all read."""
        code = self.proc.wait(timeout)
        self._stderr.join(timeout)
        return code

    def stop(self) -> int:
        """SIGTERM, then the exit code (SIGKILL after 10 s)."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._stderr.join(10)
        return self.proc.returncode


class TcpClient:
    """One connection: raw frames out, every frame in recorded (requests from the server
    answered with null)."""

    def __init__(self, port: int):
        self.sock = socket.create_connection(("127.0.0.1", port), 10)
        self.sock.settimeout(None)
        self.reader = self.sock.makefile("rb")
        self.responses: dict = {}              # id -> list of responses (one expected)
        self.notifications: list[dict] = []
        self.closed = False                    # the server closed the connection
        self._changed = threading.Condition()
        self._lock = threading.Lock()
        threading.Thread(target=self._read, daemon=True).start()

    def send(self, *messages: dict) -> None:
        """``messages`` in one write: the server reads them from its buffer as one batch."""
        data = b"".join(framed(json.dumps(m).encode()) for m in messages)
        with self._lock:
            self.sock.sendall(data)

    def request(self, method: str, params, msg_id) -> None:
        self.send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})

    def notify(self, method: str, params=None) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def _read(self) -> None:
        try:
            for message in read_frames(self.reader):
                with self._changed:
                    if "method" in message and "id" in message:
                        self.send({"jsonrpc": "2.0", "id": message["id"], "result": None})
                    elif "method" in message:
                        self.notifications.append(message)
                    else:
                        self.responses.setdefault(message.get("id"), []).append(message)
                    self._changed.notify_all()
        finally:
            with self._changed:
                self.closed = True
                self._changed.notify_all()

    def wait_for(self, predicate, timeout: float = 60) -> bool:
        deadline = time.monotonic() + timeout
        with self._changed:
            while not predicate():
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._changed.wait(min(left, 0.2))
        return True

    def wait(self, msg_id, timeout: float = 60) -> dict:
        assert self.wait_for(lambda: msg_id in self.responses, timeout), \
            f"no response to request {msg_id!r} within {timeout} s"
        return self.responses[msg_id][0]

    def call(self, method: str, params, msg_id, timeout: float = 60) -> dict:
        self.request(method, params, msg_id)
        return self.wait(msg_id, timeout)

    def start(self, options: dict, msg_id="init") -> None:
        """initialize, initialized, and until `inkling/status` says ready (or error)."""
        self.call("initialize", {"processId": None, "rootUri": None, "capabilities": {},
                                 "initializationOptions": options}, msg_id)
        self.notify("initialized", {})
        assert self.wait_for(lambda: self.state() in ("ready", "error"), 120), \
            "the session never said ready"

    def state(self) -> str | None:
        states = [n["params"]["state"] for n in self.notifications
                  if n["method"] == "inkling/status"]
        return states[-1] if states else None

    def open(self, uri: str, text: str) -> None:
        self.notify("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": "python", "version": 1, "text": text}})

    def inline(self, uri: str, line: int, character: int, msg_id) -> None:
        self.request("textDocument/inlineCompletion", {
            "textDocument": {"uri": uri}, "position": {"line": line, "character": character},
            "context": {"triggerKind": 1}}, msg_id)

    def close(self) -> None:
        """Hang up (shutdown first: the reader's file would keep the socket open)."""
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()
