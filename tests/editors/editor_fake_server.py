"""A scripted stand-in for `inkling serve` (pygls, stdio), for deterministic editor tests.

It speaks the same protocol as the real server: textDocument/inlineCompletion items with
the `inkling.accept` command, workspace/executeCommand, `inkling/status` notifications and
the `inkling/stats` request. The drafts are fixed by what precedes the cursor:

* a line ending in "return "  -> automatic: ["a + b"]; invoked: ["a + b", "b + a", "sum((a, b))"]
* a line ending in "return b"  -> ["(a, b)"]  (another draft after a word of "b + a")
* a blank indented line        -> ["total = a + b\\n    return total"]

Environment: INKLING_FAKE_INIT_DELAY (seconds) holds the initialize answer back, as a model
that loads would; INKLING_FAKE_LOG writes that many logging lines to standard error (the
real server's format) at initialize. `inkling/stats` also returns the initializationOptions
and the settings of each workspace/didChangeConfiguration received.
"""
from __future__ import annotations

import itertools
import os
import sys
import time

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer

server = LanguageServer("inkling-fake", "0")
documents: dict[str, list[str]] = {}
stats = {"requests": 0, "cancelled": 0, "answered": 0, "accepted": 0, "errors": 0,
         "latency_ms": {"p50": 1.0, "p95": 2.0, "count": 0}, "state": "ready",
         "documents": 0, "refreshes": 0, "cache_mode": "full"}
accepted: list[str] = []
ids = itertools.count(1)
offered: dict[str, str] = {}
received = {"initializationOptions": None, "configurations": []}


@server.feature(lsp.INITIALIZE)
def initialize(ls: LanguageServer, params: lsp.InitializeParams):
    received["initializationOptions"] = params.initialization_options
    for n in range(int(os.environ.get("INKLING_FAKE_LOG", "0"))):
        print(f"2025-01-01 12:00:00,000 inkling.fake INFO starting, step {n}", file=sys.stderr,
              flush=True)
    time.sleep(float(os.environ.get("INKLING_FAKE_INIT_DELAY", "0")))


@server.feature(lsp.WORKSPACE_DID_CHANGE_CONFIGURATION)
def did_change_configuration(ls: LanguageServer, params: lsp.DidChangeConfigurationParams):
    received["configurations"].append(params.settings)


def _status(state: str, message: str = "") -> None:
    server.protocol.notify("inkling/status", {"state": state, "message": message,
                                              "progress": None, "latencyMs": 1.0})


@server.feature(lsp.INITIALIZED)
def initialized(ls: LanguageServer, params):
    _status("ready", "fake model ready")


@server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
def did_open(ls: LanguageServer, params: lsp.DidOpenTextDocumentParams):
    documents[params.text_document.uri] = params.text_document.text.split("\n")
    stats["documents"] = len(documents)


@server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
def did_change(ls: LanguageServer, params: lsp.DidChangeTextDocumentParams):
    uri = params.text_document.uri
    text = "\n".join(documents[uri])
    lines = documents[uri]
    for change in params.content_changes:
        if isinstance(change, lsp.TextDocumentContentChangeWholeDocument) or not hasattr(
                change, "range") or change.range is None:
            text = change.text
        else:
            def offset(p):
                return sum(len(l) + 1 for l in lines[:p.line]) + p.character
            text = text[:offset(change.range.start)] + change.text + text[offset(change.range.end):]
        lines = text.split("\n")
    documents[uri] = lines


@server.feature(lsp.TEXT_DOCUMENT_INLINE_COMPLETION, lsp.InlineCompletionOptions())
def inline(ls: LanguageServer, params: lsp.InlineCompletionParams):
    stats["requests"] += 1
    lines = documents.get(params.text_document.uri, [])
    line = lines[params.position.line] if params.position.line < len(lines) else ""
    before = line[:params.position.character]
    invoked = params.context.trigger_kind == lsp.InlineCompletionTriggerKind.Invoked
    if before.endswith("return "):
        texts = ["a + b", "b + a", "sum((a, b))"] if invoked else ["a + b"]
    elif before.endswith("return b"):
        texts = ["(a, b)"]
    elif before.strip() == "" and before:
        texts = ["total = a + b\n    return total"]
    else:
        texts = []
    stats["answered"] += 1
    _status("ready", f"{len(texts)} draft(s)")
    at = params.position
    items = []
    for text in texts:
        draft = f"d{next(ids)}"
        offered[draft] = text
        items.append(lsp.InlineCompletionItem(
            insert_text=text, range=lsp.Range(start=at, end=at),
            command=lsp.Command(title="accept", command="inkling.accept", arguments=[draft])))
    return lsp.InlineCompletionList(items=items)


@server.command("inkling.accept")
def accept(ls: LanguageServer, *args):
    accepted.append(offered[args[0]])
    stats["accepted"] += 1
    return {"accepted": args[0]}


@server.feature("inkling/stats")
def get_stats(ls: LanguageServer, params=None):
    return {**stats, "accepted_texts": accepted, **received}


if __name__ == "__main__":
    server.start_io()
