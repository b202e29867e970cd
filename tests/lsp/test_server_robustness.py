"""The server under bad input and under load: it answers or refuses clearly, never
crashes, never corrupts a document, and keeps serving afterwards."""
import asyncio
import hashlib

import pytest
import pytest_lsp
from lsprotocol import types as lsp
from pytest_lsp import ClientServerConfig, LanguageClient

from lsp_session import SERVER, start_session

URI = "file:///ws/stress.py"


@pytest.fixture(scope="module")
def server_options(tiny_model_dir) -> dict:
    return {"model": {"path": str(tiny_model_dir)},
            "completion": {"maxNewTokens": 4, "maxBlockTokens": 4}}


def _open(client, uri, text):
    client.text_document_did_open(lsp.DidOpenTextDocumentParams(
        text_document=lsp.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)))


def _change(client, uri, version, line, char, text, end=None):
    start = lsp.Position(line=line, character=char)
    client.text_document_did_change(lsp.DidChangeTextDocumentParams(
        text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=version),
        content_changes=[lsp.TextDocumentContentChangePartial(
            range=lsp.Range(start=start, end=end or start), text=text)]))


def _inline(uri, line, char, kind=lsp.InlineCompletionTriggerKind.Invoked):
    return lsp.InlineCompletionParams(
        text_document=lsp.TextDocumentIdentifier(uri=uri),
        position=lsp.Position(line=line, character=char),
        context=lsp.InlineCompletionContext(trigger_kind=kind))


async def _sha(client, uri):
    return (await client.protocol.send_request_async("inkling/document", {"uri": uri})).sha256


def sha(text):
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


async def _still_serving(client, uri=URI):
    result = await client.text_document_inline_completion_async(_inline(uri, 0, 0))
    stats = await client.protocol.send_request_async("inkling/stats", {})
    return result is not None or stats.answered >= 0


@pytest.mark.slow
@pytest.mark.asyncio(loop_scope="module")
async def test_stress_edits_and_cancelled_completions(client: LanguageClient):
    text = "def f():\n    x = 1\n"
    _open(client, URI, text)
    line = "    y = "
    _change(client, URI, 2, 2, 0, line)
    text += line
    futures, version, cancelled_ids = [], 2, []
    for i in range(500):
        version += 1
        col = len(line) + i
        _change(client, URI, version, 2, col, "a")
        text += "a"
        if i % 5 == 2 and len(futures) < 200:
            msg_id = f"stress-{i}"
            kind = (lsp.InlineCompletionTriggerKind.Automatic if i % 2
                    else lsp.InlineCompletionTriggerKind.Invoked)
            futures.append(client.protocol.send_request(
                lsp.TEXT_DOCUMENT_INLINE_COMPLETION, _inline(URI, 2, col + 1, kind), msg_id=msg_id))
            if i % 3 == 0:
                client.protocol.notify(lsp.CANCEL_REQUEST, lsp.CancelParams(id=msg_id))
                cancelled_ids.append(msg_id)
    assert len(futures) >= 100
    outcomes = await asyncio.gather(*(asyncio.wrap_future(f) for f in futures),
                                    return_exceptions=True)
    for out in outcomes:
        if isinstance(out, Exception):
            assert "cancel" in str(out).lower() or "was edited after" in str(out), out
    assert await _sha(client, URI) == sha(text)             # the server's copy is the client's
    assert await client.text_document_inline_completion_async(_inline(URI, 2, len(line)))
    stats = await client.protocol.send_request_async("inkling/stats", {})
    assert stats.cancelled >= len(cancelled_ids) // 2 and stats.answered >= 1


@pytest.mark.slow
@pytest.mark.asyncio(loop_scope="module")
async def test_bad_positions_are_refused_and_the_server_keeps_serving(client: LanguageClient):
    uri = "file:///ws/emoji.py"
    text = "s = '😀'\n"
    _open(client, uri, text)
    with pytest.raises(Exception, match="surrogate pair"):
        await client.text_document_inline_completion_async(_inline(uri, 0, 6))
    with pytest.raises(Exception, match="line 9 is out of range"):
        await client.text_document_inline_completion_async(_inline(uri, 9, 0))
    with pytest.raises(Exception, match="unknown document"):
        await client.text_document_inline_completion_async(_inline("file:///ws/nope.py", 0, 0))
    _change(client, uri, 2, 0, 0, "x", end=lsp.Position(line=0, character=40))  # past the line
    await asyncio.sleep(0.2)
    assert await _sha(client, uri) == sha(text)             # not corrupted
    assert await _still_serving(client, uri)


@pytest.mark.slow
@pytest.mark.asyncio(loop_scope="module")
async def test_malformed_params_get_an_error(client: LanguageClient):
    import json
    from concurrent.futures import Future
    body = json.dumps({"jsonrpc": "2.0", "id": "bad-1", "method": "textDocument/inlineCompletion",
                       "params": {"textDocument": 5}})
    future: Future = Future()
    client.protocol._request_futures["bad-1"] = future       # raw bytes: the typed client
    client.protocol._result_types["bad-1"] = None             # would refuse to send this
    client.protocol.writer.write(f"Content-Length: {len(body)}\r\n\r\n{body}".encode())
    with pytest.raises(Exception):
        await asyncio.wait_for(asyncio.wrap_future(future), 10)
    with pytest.raises(Exception, match="needs a draft id"):
        await client.workspace_execute_command_async(lsp.ExecuteCommandParams(
            command="inkling.accept", arguments=[]))
    assert await _still_serving(client)


@pytest.mark.slow
@pytest.mark.asyncio(loop_scope="module")
async def test_a_document_over_one_megabyte(client: LanguageClient):
    uri = "file:///ws/huge.py"
    body = "".join(f"value_{i} = compute({i}, 'row {i}')\n" for i in range(40_000))
    assert len(body) > 1_000_000
    _open(client, uri, body)
    n = body.count("\n")
    result = await client.text_document_inline_completion_async(_inline(uri, n // 2, 0))
    assert result is not None                # answered (the prompt's windows: test_prompt.py)
    assert await _sha(client, uri) == sha(body)


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def broken(lsp_client: LanguageClient, tmp_path):
    """A server of its own, told a model path where there is none."""
    await start_session(lsp_client, {"model": {"path": str(tmp_path / "no-model")}})
    yield
    await lsp_client.shutdown_session()


@pytest.mark.slow
@pytest.mark.asyncio
async def test_a_missing_model_is_reported_once_and_the_server_keeps_serving(broken):
    client = broken
    assert client.statuses[-1].state == "error"
    assert "does not exist" in client.statuses[-1].message
    _open(client, URI, "x = 1\n")
    for _ in range(3):
        assert await client.text_document_inline_completion_async(_inline(URI, 0, 5)) is None
    shown = [m for m in client.messages if "does not exist" in m.message]
    assert len(shown) == 1                                  # said once, not a storm
    assert await _sha(client, URI) == sha("x = 1\n")


def test_work_after_an_answer_runs_behind_the_queue_and_not_after_shutdown():
    from inkling.lsp.model_worker import ModelWorker

    async def go():
        worker, ran, done = ModelWorker(), [], asyncio.Event()
        first = worker.run(lambda: ran.append("answer"))
        worker.run_after(lambda: ran.append("after"), lambda f: done.set())
        await first
        await asyncio.wait_for(done.wait(), 5)
        worker.shutdown()
        worker.run_after(lambda: ran.append("late"), lambda f: None)   # refused quietly
        return ran
    assert asyncio.run(go()) == ["answer", "after"]
