"""Talk to `inkling serve` over stdio as an editor would, with nothing but the standard
library: initialize, wait for the model (`inkling/status` ready), open FILE, ask for an
inline completion at LINE:CHARACTER (both from 0), shut down. Exits non-zero, saying
why, when any answer is missing or an error.

    python scripts/lsp_smoke.py INKLING_COMMAND FILE LINE CHARACTER
"""
from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

TIMEOUT_S = 300                     # a first start may load the model slowly on a busy machine


def read_frames(stream, inbox: list, ready: threading.Condition) -> None:
    while True:
        length = None
        while (line := stream.readline()) not in (b"\r\n", b""):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        if not line or length is None:
            return
        message = json.loads(stream.read(length))
        with ready:
            inbox.append(message)
            ready.notify_all()


def main(command: str, path: str, line: int, character: int) -> None:
    server = subprocess.Popen([command, "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    inbox: list[dict] = []
    ready = threading.Condition()
    threading.Thread(target=read_frames, args=(server.stdout, inbox, ready), daemon=True).start()

    def send(message: dict) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        server.stdin.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        server.stdin.flush()

    def wait(test, what: str) -> dict:
        deadline = time.monotonic() + TIMEOUT_S
        with ready:
            while not (found := next((m for m in inbox if test(m)), None)):
                if time.monotonic() > deadline or server.poll() is not None:
                    sys.exit(f"lsp_smoke: no {what} from the server (exit code {server.poll()})")
                ready.wait(1)
        if "error" in found:
            sys.exit(f"lsp_smoke: {what} failed: {found['error']}")
        return found

    uri = Path(path).resolve().as_uri()
    send({"id": 1, "method": "initialize", "params": {"processId": None, "rootUri": None, "capabilities": {}}})
    wait(lambda m: m.get("id") == 1, "answer to initialize")
    send({"method": "initialized", "params": {}})
    status = wait(lambda m: m.get("method") == "inkling/status"
                  and m["params"]["state"] in ("ready", "error"), "inkling/status ready")
    if status["params"]["state"] == "error":
        sys.exit(f"lsp_smoke: the model did not load: {status['params']}")
    send({"method": "textDocument/didOpen", "params": {"textDocument": {
        "uri": uri, "languageId": "python", "version": 1, "text": Path(path).read_text()}}})
    send({"id": 2, "method": "textDocument/inlineCompletion", "params": {
        "textDocument": {"uri": uri}, "position": {"line": line, "character": character},
        "context": {"triggerKind": 1}}})
    items = wait(lambda m: m.get("id") == 2, "answer to textDocument/inlineCompletion")["result"]
    items = items["items"] if isinstance(items, dict) else items
    if not items:
        sys.exit("lsp_smoke: the inline completion had no items")
    print(f"lsp_smoke: {len(items)} drafts, the first {items[0]['insertText']!r}", file=sys.stderr)
    send({"id": 3, "method": "shutdown"})
    wait(lambda m: m.get("id") == 3, "answer to shutdown")
    send({"method": "exit"})
    server.wait(30)


if __name__ == "__main__":
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
