"""Conversions between LSP types (lsprotocol) and the Engine's own: all in one place."""
from __future__ import annotations

from lsprotocol import types as lsp

from inkling.completion.document import Position, Range, TextChange
from inkling.completion.engine import Completion, Draft

ACCEPT_COMMAND = "inkling.accept"


def position(p: lsp.Position) -> Position:
    return Position(p.line, p.character)


def lsp_position(p: Position) -> lsp.Position:
    return lsp.Position(line=p.line, character=p.character)


def changes(events) -> list[TextChange]:
    out = []
    for e in events:
        rng = getattr(e, "range", None)
        out.append(TextChange(e.text, None if rng is None else
                              Range(position(rng.start), position(rng.end))))
    return out


def _accept(draft: Draft) -> lsp.Command:
    return lsp.Command(title="inkling: accept", command=ACCEPT_COMMAND, arguments=[draft.id])


def inline_items(result: Completion) -> lsp.InlineCompletionList:
    at = lsp_position(result.position)
    return lsp.InlineCompletionList(items=[
        lsp.InlineCompletionItem(insert_text=d.text, range=lsp.Range(start=at, end=at),
                                 command=_accept(d))
        for d in result.drafts if d.text])


def completion_items(result: Completion) -> lsp.CompletionList:
    at = lsp_position(result.position)
    items = []
    for rank, d in enumerate(result.drafts):
        if not d.text:
            continue
        first = d.text.strip().split("\n")[0]
        items.append(lsp.CompletionItem(
            label=first if len(first) <= 60 else first[:57] + "...",
            kind=lsp.CompletionItemKind.Text, detail="inkling",
            documentation=lsp.MarkupContent(kind=lsp.MarkupKind.Markdown,
                                            value=f"```\n{d.text}\n```"),
            sort_text=f"{rank:03d}", filter_text=d.text.split("\n")[0],
            text_edit=lsp.TextEdit(range=lsp.Range(start=at, end=at), new_text=d.text),
            command=_accept(d)))
    return lsp.CompletionList(is_incomplete=True, items=items)


def completion_metrics(result: Completion) -> dict:
    """The Engine's own figures for one completion (the `inkling/lastCompletion` request)."""
    return {"latencyMs": result.latency_ms, "firstTokenMs": result.first_token_ms,
            "modelMs": result.model_ms, "forwards": result.forwards, "tokens": result.tokens,
            "prefillTokens": result.prefill_tokens, "reusedTokens": result.reused_tokens,
            "staleTokens": result.stale_tokens, "refreshed": result.refreshed,
            "draftMs": list(result.draft_ms), "drafts": [d.text for d in result.drafts],
            "contextTokens": result.context_tokens, "contextText": result.context_text,
            # several drafts asked for: the ones not worth showing and why fewer came back
            "asked": result.asked, "shortfall": result.shortfall,
            # what the syntax guard cut from the first decoded draft (characters; emptied)
            "guardCut": result.guard.chars, "guardEmptied": result.guard.emptied,
            "dropped": [{"rank": d.rank, "text": d.text, "reason": d.reason, "like": d.like}
                        for d in result.dropped]}
