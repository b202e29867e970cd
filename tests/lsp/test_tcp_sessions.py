"""`inkling serve --tcp` as a server for several editors: the real server as a subprocess,
raw clients over sockets (tests/lsp_tcp.py). Each connection is its own session: its own
documents (the same uri too), its own answers under its own request ids; `exit` or a
disconnect ends only that session, and the server listens until SIGTERM. A port in use or
out of range is one line naming it."""
from __future__ import annotations

import hashlib
import socket
import subprocess
import time

import pytest

from lsp_tcp import SERVER, TcpClient, TcpServer

pytestmark = pytest.mark.slow

URI = "file:///ws/shared.py"
A_TEXT = ("import os\n\n\ndef walk(root):\n    for name in os.listdir(root):\n"
          "        print(name)\n")                   # six lines: line 5 is A's only
B_TEXT = "x = 1\n"
C_TEXT = "def f(a, b):\n    return a\n"


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@pytest.fixture()
def options(bundled_model_dir) -> dict:
    # the compact forward: what is shared here does not hang on a native build
    return {"model": {"path": str(bundled_model_dir), "forward": "compact"},
            "completion": {"maxNewTokens": 4, "maxBlockTokens": 4}}


@pytest.fixture()
def server():
    s = TcpServer("--log-level", "info")
    yield s
    s.stop()


def _answered_once(client: TcpClient, ids) -> None:
    for msg_id in ids:
        client.wait(msg_id)
    assert {i: len(client.responses[i]) for i in ids} == {i: 1 for i in ids}
    assert set(client.responses) == set(ids) | {"init"}, "answers to requests not sent here"


def _document(client: TcpClient, msg_id) -> dict:
    response = client.call("inkling/document", {"uri": URI}, msg_id)
    assert "result" in response, response
    return response["result"]


def _sessions_left(client: TcpClient, alive: int) -> bool:
    """Whether `inkling/stats` comes to count ``alive`` sessions (an ended one is freed once
    its Engine has shut down on the model thread)."""
    for attempt in range(300):
        if client.call("inkling/stats", None, f"sessions-{attempt}")["result"]["sessions"] \
                == alive:
            return True
        time.sleep(0.1)
    return False


def test_two_editors_at_once_each_get_only_their_own_answers(server, options):
    a, b = TcpClient(server.port), TcpClient(server.port)
    a.start(options)
    b.start(options)
    a.open(URI, A_TEXT)
    b.open(URI, B_TEXT)                            # the same uri, another text
    a.open("file:///ws/other.py", "y = 2\n")
    for i in (1, 2, 3):                            # the same ids on both, interleaved
        a.inline(URI, 5, 8, i)
        b.inline(URI, 0, 5, i)
    for client in (a, b):
        _answered_once(client, (1, 2, 3))
        assert all("result" in client.responses[i][0] for i in (1, 2, 3)), client.responses

    # line 5 is in A's document only: A gets drafts there, B an error naming the position
    a.inline(URI, 5, 8, 4)
    assert a.wait(4).get("result"), a.responses[4]
    b.inline(URI, 5, 8, 4)
    assert b.wait(4)["error"]["code"] == -32602
    assert _document(a, 5)["sha256"] == sha(A_TEXT)
    assert _document(b, 5)["sha256"] == sha(B_TEXT)
    assert a.call("inkling/stats", None, 6)["result"]["documents"] == 2
    assert a.responses[6][0]["result"]["sessions"] == 2
    assert b.call("inkling/stats", None, 6)["result"]["documents"] == 1

    assert "result" in a.call("shutdown", None, 7)    # A leaves: answered, then hung up on
    a.notify("exit")
    assert a.wait_for(lambda: a.closed, 30), "A's connection stayed open after exit"
    assert server.proc.poll() is None, "the server ended with A's session"

    b.inline(URI, 0, 5, 8)                          # B keeps working, its document kept
    assert "result" in b.wait(8)
    assert _document(b, 9)["sha256"] == sha(B_TEXT)

    c = TcpClient(server.port)                      # a third editor, after A left
    c.start(options)
    c.open(URI, C_TEXT)
    b.close()                                       # B drops without shutdown
    c.inline(URI, 1, 12, 1)
    assert c.wait(1).get("result"), c.responses[1]
    assert _document(c, 2)["sha256"] == sha(C_TEXT)
    assert server.proc.poll() is None
    assert _sessions_left(c, 1), "the ended sessions are still held in the server"
    c.close()

    assert server.stop() == 0                        # SIGTERM ends the server
    assert not [line for line in server.stderr if "Traceback" in line], server.stderr
    assert a.responses.keys() == {"init", 1, 2, 3, 4, 5, 6, 7}


def test_a_port_in_use_is_one_line_naming_it():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        s = TcpServer(port=port, wait=False)
        code = s.ended(60)
    lines = [line for line in s.stderr if line.strip()]
    assert code in (1, 2), lines
    assert f"cannot listen on 127.0.0.1:{port}: address already in use" in lines[-1], lines
    assert not [line for line in lines if "Traceback" in line], lines


@pytest.mark.parametrize("port", ["99999", "0"])
def test_a_port_out_of_range_is_refused_at_argument_parsing(port):
    done = subprocess.run(SERVER + ["--tcp", port], capture_output=True, text=True, timeout=60)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, done.stderr
    assert "--tcp" in lines[-1] and port in lines[-1] and "1 to 65535" in lines[-1], lines
    assert "Traceback" not in done.stderr



def test_an_address_not_this_hosts_is_one_line_naming_it():
    s = TcpServer("--host", "192.0.2.1", wait=False)       # TEST-NET-1: no host has it
    code = s.ended(60)
    lines = [line for line in s.stderr if line.strip()]
    assert code in (1, 2), lines
    assert f"cannot listen on 192.0.2.1:{s.port}: cannot assign requested address" in \
        lines[-1], lines
    assert not [line for line in lines if "Traceback" in line or "WARNING" in line], lines


@pytest.mark.parametrize("then", ["didClose", "didChange"])
def test_a_completion_sent_with_its_documents_close_or_edit_is_content_modified(server, options,
                                                                               then):
    """A completion and its document's close (or an edit removing its line) in one write: the
    server reads both from its buffer before the completion's handler starts, and the
    completion must still be cancelled by them (-32801), not fail on the closed document."""
    client = TcpClient(server.port)
    client.start(options)
    client.open(URI, A_TEXT)
    assert _document(client, "opened")["sha256"] == sha(A_TEXT)
    after = {"textDocument": {"uri": URI}} if then == "didClose" else {
        "textDocument": {"uri": URI, "version": 2}, "contentChanges": [{"text": B_TEXT}]}
    client.send({"jsonrpc": "2.0", "id": "batched", "method": "textDocument/inlineCompletion",
                 "params": {"textDocument": {"uri": URI},
                            "position": {"line": 5, "character": 19},
                            "context": {"triggerKind": 1}}},           # invoked: no debounce
                {"jsonrpc": "2.0", "method": f"textDocument/{then}", "params": after})
    error = client.wait("batched").get("error")
    assert error is not None and error["code"] == -32801, client.responses["batched"]
    assert not [line for line in server.stderr if "Traceback" in line]
    client.close()
