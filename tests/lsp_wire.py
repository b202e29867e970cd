"""A raw LSP client over a real `inkling serve` subprocess, for the protocol-edge tests:
it writes any bytes (bad JSON, wrong types, lone surrogates), and records every frame the
server writes, every response by id, and everything on stderr."""
from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

from inkling.evaluation.soak_wire import framed, read_frames

SERVER = [sys.executable, "-m", "inkling.cli.main", "serve"]


class Wire:
    def __init__(self, model_dir: Path, options: dict | None = None, log_level: str = "warning",
                 ready: bool = True):
        """Start, initialise and (``ready``) wait until the server is ready or failed."""
        self.proc = subprocess.Popen(SERVER + ["--log-level", log_level], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.responses: dict = {}              # id -> list of responses (one expected)
        self.null_id: list[dict] = []          # error responses with id null
        self.notifications: list[dict] = []
        self.stderr: list[str] = []
        self._changed = threading.Condition()
        self._ids = 0
        self.sent: set = set()
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()
        self.request("initialize", {"processId": None, "rootUri": None, "capabilities": {},
                                    "initializationOptions": {"model": {"path": str(model_dir)},
                                                              **(options or {})}})
        self.wait(self.last_id, 60)
        self.notify("initialized", {})
        if ready:
            self.wait_ready()

    def wait_ready(self, timeout: float = 120) -> bool:
        return self.wait_for(lambda: any(n["method"] == "inkling/status" and
                                         n["params"]["state"] in ("ready", "error")
                                         for n in self.notifications), timeout)

    # --------------------------------------------------------------- writing
    def frame(self, body: bytes) -> None:
        self.proc.stdin.write(framed(body))
        self.proc.stdin.flush()

    def send(self, message: dict) -> None:
        self.frame(json.dumps(message).encode())   # lone surrogates go out as \\ud800

    def request(self, method: str, params=..., msg_id=None):
        if msg_id is None:
            self._ids += 1
            msg_id = self._ids
        self.last_id = msg_id
        message = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not ...:
            message["params"] = params
        self.sent.add(msg_id)
        self.send(message)
        return msg_id

    def notify(self, method: str, params=...) -> None:
        message = {"jsonrpc": "2.0", "method": method}
        if params is not ...:
            message["params"] = params
        self.send(message)

    # --------------------------------------------------------------- reading
    def _read(self) -> None:
        for message in read_frames(self.proc.stdout):
            with self._changed:
                if "method" in message and "id" in message:     # a request from the server
                    self.send({"jsonrpc": "2.0", "id": message["id"], "result": None})
                elif "method" in message:
                    self.notifications.append(message)
                elif message.get("id") is None:
                    self.null_id.append(message)
                else:
                    self.responses.setdefault(message["id"], []).append(message)
                self._changed.notify_all()

    def _read_stderr(self) -> None:
        for line in self.proc.stderr:
            self.stderr.append(line.decode("utf-8", "replace"))

    def wait_for(self, predicate, timeout: float = 30) -> bool:
        deadline = time.monotonic() + timeout
        with self._changed:
            while not predicate():
                left = deadline - time.monotonic()
                if left <= 0 or self.proc.poll() is not None:
                    return predicate()
                self._changed.wait(min(left, 0.2))
        return True

    def wait(self, msg_id, timeout: float = 30) -> dict:
        """The one response to ``msg_id`` (an AssertionError when none comes)."""
        assert self.wait_for(lambda: msg_id in self.responses, timeout), \
            f"no response to request {msg_id!r} within {timeout} s"
        return self.responses[msg_id][0]

    def call(self, method: str, params=..., timeout: float = 30) -> dict:
        return self.wait(self.request(method, params), timeout)

    def unanswered(self) -> list:
        return sorted((i for i in self.sent if i not in self.responses), key=str)

    def answered_twice(self) -> list:
        return [i for i, rs in self.responses.items() if len(rs) > 1]

    def log_messages(self) -> list[str]:
        return [n["params"]["message"] for n in self.notifications
                if n["method"] == "window/logMessage"]

    def popups(self) -> list[str]:
        return [n["params"]["message"] for n in self.notifications
                if n["method"] == "window/showMessage"]

    def tracebacks(self) -> list[str]:
        return [line for line in self.stderr if "Traceback" in line]

    def rss_mb(self) -> float:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return 0.0

    # ------------------------------------------------------------ documents
    def open(self, uri: str, text: str, version: int = 1) -> None:
        self.notify("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": "python", "version": version, "text": text}})

    def change(self, uri: str, version, changes: list) -> None:
        self.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version},
                                               "contentChanges": changes})

    def sha256(self, uri: str, timeout: float = 30) -> str:
        response = self.call("inkling/document", {"uri": uri}, timeout)
        assert "result" in response, response
        return response["result"]["sha256"]

    def inline(self, uri: str, line, character, kind: int = 1, msg_id=None):
        return self.request("textDocument/inlineCompletion", {
            "textDocument": {"uri": uri}, "position": {"line": line, "character": character},
            "context": {"triggerKind": kind}}, msg_id)

    def close(self, timeout: float = 10) -> tuple[int, float]:
        """shutdown, then exit: (exit code, seconds from exit to the process's end)."""
        if self.proc.poll() is None:
            self.wait(self.request("shutdown"), timeout)
            t0 = time.monotonic()
            self.notify("exit")
            code = self.proc.wait(timeout)
            return code, time.monotonic() - t0
        return self.proc.returncode, 0.0

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
