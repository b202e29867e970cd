"""End to end: the real server as a subprocess over stdio, driven by pytest-lsp."""
import asyncio

import pytest
from lsprotocol import types as lsp
from pytest_lsp import LanguageClient

URI = "file:///ws/demo.py"

# every test here talks to the real server (the `client` fixture of conftest.py)
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def server_options(tiny_model_dir) -> dict:
    return {"model": {"path": str(tiny_model_dir)}, "completion": {"maxNewTokens": 6}}


async def _stats(client):
    """inkling/stats (pygls hands custom results back as named tuples)."""
    return await client.protocol.send_request_async("inkling/stats", {})


def _open(client, uri, text, version=1):
    client.text_document_did_open(lsp.DidOpenTextDocumentParams(
        text_document=lsp.TextDocumentItem(uri=uri, language_id="python", version=version,
                                           text=text)))


def _insert(client, uri, line, char, text, version):
    at = lsp.Position(line=line, character=char)
    client.text_document_did_change(lsp.DidChangeTextDocumentParams(
        text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=version),
        content_changes=[lsp.TextDocumentContentChangePartial(
            range=lsp.Range(start=at, end=at), text=text)]))


def _inline(uri, line, char, kind=lsp.InlineCompletionTriggerKind.Invoked):
    return lsp.InlineCompletionParams(
        text_document=lsp.TextDocumentIdentifier(uri=uri),
        position=lsp.Position(line=line, character=char),
        context=lsp.InlineCompletionContext(trigger_kind=kind))


@pytest.mark.asyncio(loop_scope="module")
async def test_model_load_reports_progress_and_status(client: LanguageClient):
    states = [s.state for s in client.statuses]
    assert "loading" in states and states[-1] == "ready", states
    reports = [r for rs in client.progress_reports.values() for r in rs]
    assert any(isinstance(r, lsp.WorkDoneProgressBegin) for r in reports)
    assert any(isinstance(r, lsp.WorkDoneProgressEnd) for r in reports)


@pytest.mark.asyncio(loop_scope="module")
async def test_inline_completion_accept_and_stats(client: LanguageClient):
    _open(client, URI, "def add(a, b):\n    return \n")
    _insert(client, URI, 1, 11, "a", 2)
    result = await client.text_document_inline_completion_async(_inline(URI, 1, 12))
    assert result is not None
    items = result.items if hasattr(result, "items") else result
    stats = await _stats(client)
    assert stats.requests >= 1 and stats.answered >= 1
    assert stats.latency_ms.p50 is not None
    if items:   # a random model may suggest nothing at all; then there is nothing to accept
        cmd = items[0].command
        assert cmd.command == "inkling.accept"
        await client.workspace_execute_command_async(lsp.ExecuteCommandParams(
            command=cmd.command, arguments=cmd.arguments))
        stats = await _stats(client)
        assert stats.accepted == 1


@pytest.mark.asyncio(loop_scope="module")
async def test_completion_items_carry_the_accept_command(client: LanguageClient):
    _open(client, "file:///ws/c.py", "import os\nx = os.\n")
    result = await client.text_document_completion_async(lsp.CompletionParams(
        text_document=lsp.TextDocumentIdentifier(uri="file:///ws/c.py"),
        position=lsp.Position(line=1, character=7)))
    assert result is not None and result.is_incomplete
    for item in result.items:
        assert item.command.command == "inkling.accept" and item.text_edit.new_text


@pytest.mark.asyncio(loop_scope="module")
async def test_unknown_document_is_an_error_naming_it(client: LanguageClient):
    with pytest.raises(Exception, match="unknown document file:///ws/never.py"):
        await client.text_document_inline_completion_async(_inline("file:///ws/never.py", 0, 0))


@pytest.mark.asyncio(loop_scope="module")
async def test_bad_change_is_refused_and_document_kept(client: LanguageClient):
    uri = "file:///ws/bad.py"
    _open(client, uri, "x = 1\n")
    _insert(client, uri, 40, 0, "boom", 2)             # a line that does not exist
    await asyncio.sleep(0.3)
    assert any("refused" in m.message and "line 40" in m.message for m in client.log_messages)
    assert not any("line 40" in m.message for m in client.messages)   # a log line, no popup
    _insert(client, uri, 0, 5, "0", 3)                # the document is still usable
    result = await client.text_document_inline_completion_async(_inline(uri, 0, 6))
    assert result is not None


@pytest.mark.asyncio(loop_scope="module")
async def test_invalid_setting_is_named_and_previous_kept(client: LanguageClient):
    client.workspace_did_change_configuration(lsp.DidChangeConfigurationParams(
        settings={"inkling": {"completion": {"maxNewTokens": -3}}}))
    await asyncio.sleep(0.3)
    assert any("completion.max_new_tokens" in m.message for m in client.messages)
    result = await client.text_document_inline_completion_async(_inline(URI, 1, 12))
    assert result is not None


@pytest.mark.asyncio(loop_scope="module")
async def test_new_request_supersedes_the_previous_one(client: LanguageClient):
    before = await _stats(client)
    auto = lsp.InlineCompletionTriggerKind.Automatic
    first = client.text_document_inline_completion_async(_inline(URI, 1, 12, auto))
    second = client.text_document_inline_completion_async(_inline(URI, 1, 12, auto))
    r1, r2 = await asyncio.gather(first, second)
    after = await _stats(client)
    assert r1 is None                                # superseded while it waited
    assert after.cancelled >= before.cancelled + 1


@pytest.mark.asyncio(loop_scope="module")
async def test_cancel_request_is_honoured(client: LanguageClient):
    before = await _stats(client)
    future = client.protocol.send_request(
        lsp.TEXT_DOCUMENT_INLINE_COMPLETION,
        _inline(URI, 1, 12, lsp.InlineCompletionTriggerKind.Automatic), msg_id="cancel-me")
    client.protocol.notify(lsp.CANCEL_REQUEST, lsp.CancelParams(id="cancel-me"))
    with pytest.raises(Exception, match="(?i)cancel"):
        await asyncio.wait_for(asyncio.wrap_future(future), 30)
    after = await _stats(client)
    assert after.cancelled >= before.cancelled + 1


@pytest.mark.asyncio(loop_scope="module")
async def test_pie_cache_is_refreshed_in_idle_time(client: LanguageClient):
    client.workspace_did_change_configuration(lsp.DidChangeConfigurationParams(settings={
        "inkling": {"cache": {"mode": "pie", "staleThreshold": 1.0, "idleRefreshMs": 150}}}))
    uri = "file:///ws/idle.py"
    _open(client, uri, "import os\n\n\ndef f(a):\n    return a\n")
    assert await client.text_document_inline_completion_async(_inline(uri, 4, 12)) is not None
    _insert(client, uri, 0, 0, "# top\n", 2)          # everything after it is now stale
    assert await client.text_document_inline_completion_async(_inline(uri, 5, 12)) is not None
    before = await _stats(client)
    assert before.cache_mode == "pie"
    for _ in range(50):
        await asyncio.sleep(0.1)
        after = await _stats(client)
        if after.refreshes > before.refreshes:
            break
    assert after.refreshes > before.refreshes


@pytest.mark.asyncio(loop_scope="module")
async def test_suffix_drafting_builds_the_datastore_with_progress(client: LanguageClient,
                                                                   tmp_path):
    (tmp_path / "lib.py").write_text("def mean(values):\n    return sum(values) / len(values)\n")
    client.workspace_did_change_configuration(lsp.DidChangeConfigurationParams(settings={
        "inkling": {"completion": {"datastore": str(tmp_path / "missing")}}}))
    await asyncio.sleep(0.3)
    assert any("missing" in m.message and "completion.datastore" in m.message
               for m in client.messages)
    client.workspace_did_change_configuration(lsp.DidChangeConfigurationParams(settings={
        "inkling": {"completion": {"draft": "suffix", "datastore": str(tmp_path)}}}))
    ends = []
    for _ in range(100):
        await asyncio.sleep(0.1)
        ends = [r.message for rs in client.progress_reports.values() for r in rs
                if isinstance(r, lsp.WorkDoneProgressEnd) and "datastore" in (r.message or "")
                and "1 files" in (r.message or "")]     # this folder's (not the corpus's)
        if ends:
            break
    assert ends, ends
    uri = "file:///ws/drafted.py"              # its own document: runs alone with -k too
    _open(client, uri, "def add(a, b):\n    return \n")
    learnt = (await _stats(client)).learnt
    result = await client.text_document_inline_completion_async(   # one draft: drafted
        _inline(uri, 1, 11, lsp.InlineCompletionTriggerKind.Automatic))
    assert result is not None
    for _ in range(50):                       # the meter learns after the answer is sent
        if (await _stats(client)).learnt > learnt:
            break
        await asyncio.sleep(0.1)
    assert (await _stats(client)).learnt == learnt + 1
    client.workspace_did_change_configuration(lsp.DidChangeConfigurationParams(settings={
        "inkling": {"completion": {"draft": "none"}}}))
