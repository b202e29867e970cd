"""Headless replay of edit traces through the Engine, as the LSP server drives it.

Each trace gets a fresh Engine on the shared model and a fresh temporary workspace root. A trace's
problems are recorded with its name and line; configuration errors propagate, since no trace could
replay."""
from __future__ import annotations

import contextlib
import logging
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from inkling.analysis import AnalysisOptions, CodeAnalysis
from inkling.analysis.trigger_identifier import identifier_matches
from inkling.completion.engine import Engine
from inkling.completion.errors import DocumentError
from inkling.completion.options import InklingOptions

from inkling.lsp.languages import language_for

from inkling.evaluation.metrics import exact_line, shown
from inkling.evaluation.replay_clock import ReplayClock
from inkling.evaluation.replay_result import CompletionRecord, ReplayFailure, TraceResult
from inkling.evaluation.syntax_check import SyntaxChecker
from inkling.evaluation.trace_file import (AcceptEvent, ChangeEvent, CheckEvent, CloseEvent,
                                           CompleteEvent, Event, FileEvent, OpenEvent, Trace,
                                           TraceError)

Tick = Callable[[int], None]      # called with a number of events done
log = logging.getLogger(__name__)


class _Session:
    """One trace's replay: a workspace root, an Engine, open documents' versions."""

    def __init__(self, trace: Trace, root: Path, engine: Engine, checker: SyntaxChecker,
                 result: TraceResult, model_seconds: Callable[[], float] = lambda: 0.0):
        self.trace, self.root, self.engine = trace, root, engine
        self.checker, self.result = checker, result
        self.model_seconds = model_seconds   # the shared model's forward seconds so far
        self.spent_s = self.model_s = 0.0    # this session's own time, and its model's
        self.versions: dict[str, int] = {}
        # per path, the latest completion's expected text and drafts (None once accepted)
        self.latest: dict[str, tuple[str, tuple] | None] = {}
        # the metrics' analysis: the Engine's in process; through LSP the client keeps its own
        self.own_analysis = not isinstance(engine, Engine)
        if self.own_analysis:
            self.analysis = CodeAnalysis(AnalysisOptions(background=False, watch=False))
            self.analysis.set_workspace_folders([root])
        else:
            self.analysis = engine.editor.analysis
        self.clock = ReplayClock()

    def uri(self, path: str) -> str:
        return (self.root / path).as_uri()

    def language(self, path: str) -> str:
        return language_for(path, self.trace.header.language)

    def apply(self, e: Event) -> None:
        handler = {FileEvent: self._file, OpenEvent: self._open, ChangeEvent: self._change,
                   CompleteEvent: self._complete, AcceptEvent: self._accept,
                   CheckEvent: self._check, CloseEvent: self._close}[type(e)]
        handler(e)

    def _file(self, e: FileEvent) -> None:
        target = self.root / e.path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(e.text.encode("utf-8"))
        if self.own_analysis:
            self.analysis.index_file(target)
        self.engine.workspace_file_changed(str(target))    # as the server's file watcher does

    def _open(self, e: OpenEvent) -> None:
        if e.path in self.versions:
            raise TraceError(self.trace.source, e.line, f"open of {e.path}, which is already "
                             "open (close it first)")
        self.versions[e.path] = 1
        self.engine.open(self.uri(e.path), e.text, 1, self.language(e.path))
        if self.own_analysis:
            self.analysis.open(self.uri(e.path), e.text, self.language(e.path))

    def _change(self, e: ChangeEvent) -> None:
        version = self.versions.get(e.path, 0) + 1
        t0 = time.perf_counter()
        self.engine.apply_change(self.uri(e.path), list(e.changes), version)
        self.result.edit_ms.append((time.perf_counter() - t0) * 1000)
        self.versions[e.path] = version
        if self.own_analysis:
            uri = self.uri(e.path)
            self.analysis.change(uri, self.engine.document(uri).text)

    def _complete(self, e: CompleteEvent) -> None:
        uri, language = self.uri(e.path), self.language(e.path)
        doc = self.engine.document(uri)
        text, offset = doc.text, doc.offset_at(e.position)
        out = self.engine.complete(uri, e.position, trigger=e.trigger)   # k: the engine's
        # through the protocol latency_ms is the client's round trip, less the protocol's part
        engine_ms = out.latency_ms - self.engine.overhead_ms[-1] if self.own_analysis else None
        drafts = tuple(d.text for d in out.drafts)
        first = drafts[0] if drafts else ""
        self.latest[e.path] = (e.expected, tuple(out.drafts))
        if self.own_analysis:
            self.analysis.change(uri, text)
        # judged only where the first draft shows something: an emptied draft is not valid
        valid, undefined, failed = self._judge(uri, language, text, offset, first) \
            if shown(first) else (None, None, ())
        found = self.analysis.trigger_identifier(uri, offset, e.expected)
        matched = identifier_matches(first, e.expected, found) if found is not None else None
        self.result.completions.append(CompletionRecord(
            e.line, e.path, e.expected, drafts, out.latency_ms, out.first_token_ms, out.model_ms,
            out.forwards, out.tokens, out.prefill_tokens, out.reused_tokens, valid,
            out.stale_tokens, out.refreshed, undefined, matched, out.draft_ms,
            out.context_tokens, out.context_text, asked=out.asked,
            guard_cut=out.guard.chars, guard_emptied=out.guard.emptied, failed=failed,
            engine_ms=engine_ms))
        self.engine.settle()             # after the answer, as the server does

    def _judge(self, uri: str, language: str, text: str, offset: int, draft: str
               ) -> tuple[bool | None, tuple[str, ...] | None, tuple[str, ...]]:
        """(syntax_valid, undefined names, failed metrics) of a shown ``draft``; None: not
        measured."""
        failed = []
        try:
            valid = self.checker.valid(language, text, offset, draft)
        except Exception:            # noqa: BLE001 -- counted in analysis_failures, not lost
            log.exception("syntax_valid failed at %s, offset %d", uri, offset)
            valid = None
            failed.append("syntax_valid")
        names = self.analysis.undefined_names(uri, offset, draft)   # None: it logged why
        if names is None and language == "python":
            failed.append("undefined_names")
        return valid, (tuple(names) if names is not None else None), tuple(failed)

    def _accept(self, e: AcceptEvent) -> None:
        """Accept draft ``e.draft`` of the latest completion if its first line is what was typed
        next (exact_line); otherwise, or once accepted, nothing is taken."""
        if e.path not in self.latest:
            raise TraceError(self.trace.source, e.line, f"accept in {e.path} before any "
                             "completion there (since it was opened)")
        self.result.accepts += 1
        latest, self.latest[e.path] = self.latest[e.path], None
        if latest is None or e.draft >= len(latest[1]):
            return
        expected, draft = latest[0], latest[1][e.draft]
        if draft.text and exact_line(draft.text, expected):
            self.engine.accept(draft.id)
            self.result.accepted += 1

    def _check(self, e: CheckEvent) -> None:
        actual = self.engine.document_sha256(self.uri(e.path))
        self.result.checks += 1
        if actual != e.sha256:
            self.result.failures.append(ReplayFailure(
                self.trace.source, e.line, f"check failed for {e.path}: the document's sha256 is "
                f"{actual[:16]}..., the trace expects {e.sha256[:16]}...", "check"))

    def _close(self, e: CloseEvent) -> None:
        self.engine.close(self.uri(e.path))
        if self.own_analysis:
            self.analysis.close(self.uri(e.path))
        self.versions.pop(e.path, None)
        self.latest.pop(e.path, None)

    def failure(self, e: Event, exc: Exception) -> ReplayFailure:
        """``exc`` as a failure at ``e``'s line, without the temporary root in its text."""
        message = exc.message if isinstance(exc, TraceError) else str(exc)
        message = message.replace(self.root.as_uri() + "/", "")
        return ReplayFailure(self.trace.source, e.line, f"{type(e).__name__[:-5].lower()} "
                             f"event: {message}")


def _step(session: _Session, event: Event) -> bool:
    """Apply one event after the idle policy, timed into the session; False: it failed."""
    t0, model_s0 = time.perf_counter(), session.model_seconds()
    try:
        quiet = session.clock.quiet_before(event)
        session.result.idle_tokens += session.engine.idle(quiet)
        session.apply(event)
        return True
    except (DocumentError, TraceError, OSError) as exc:
        session.result.failures.append(session.failure(event, exc))
        return False
    finally:
        session.spent_s += time.perf_counter() - t0
        session.model_s += session.model_seconds() - model_s0


def _run(session: _Session, tick: Tick) -> None:
    """Apply a trace's events in order; the first error ends the trace (recorded)."""
    events = session.trace.events
    for done, event in enumerate(events, start=1):
        if not _step(session, event):
            tick(len(events) - done + 1)
            return
        tick(1)


def replay_together(replayers: list, trace: Trace, tick: Tick = lambda n: None
                    ) -> list[TraceResult]:
    """``trace`` under each replayer, each event in every session before the next, so the
    machine's drift hits every combination alike; the order rotates (``turn_order``). A failed
    session ends there (recorded); the others go on."""
    with contextlib.ExitStack() as stack:
        sessions = [stack.enter_context(r.session(trace)) for r in replayers]
        live = [True] * len(sessions)
        turns: dict[type, int] = {}                  # events of each kind so far
        events = trace.events
        for n, event in enumerate(events):
            turn = turns[type(event)] = turns.get(type(event), -1) + 1
            for i in turn_order(len(sessions), turn):
                if live[i]:
                    live[i] = _step(sessions[i], event)
                    tick(1 if live[i] else len(events) - n)
    return [s.result for s in sessions]


def turn_order(n: int, turn: int) -> list[int]:
    """The order of ``n`` sessions at a kind's ``turn``-th event: forward on even turns, backward
    on odd, starting one further every second turn, so each session takes every place alike."""
    start = (turn // 2) % n
    order = [(start + j) % n for j in range(n)]
    return order if turn % 2 == 0 else order[::-1]


@dataclass
class Replayer:
    options: InklingOptions
    runtime: object                  # a loaded ModelRuntime, shared by every trace's Engine
    checker: SyntaxChecker
    datastore: object = None         # a Datastore, built for the first trace that drafts

    def replay(self, trace: Trace, tick: Tick = lambda n: None) -> TraceResult:
        with self.session(trace) as session:
            _run(session, tick)
        return session.result

    @contextlib.contextmanager
    def session(self, trace: Trace) -> Iterator[_Session]:
        """``trace``'s session: a new Engine on the shared model in a new temporary root; the
        result's ``total_ms``/``model_ms`` are the session's own time."""
        result = TraceResult(trace.source, trace.name)
        t0, model_s0 = time.perf_counter(), self.runtime.stats.seconds
        with tempfile.TemporaryDirectory(prefix="inkling-replay-") as tmp:
            root = Path(tmp).resolve()
            engine = Engine(self.options, self.runtime, self.datastore)
            engine.workspace_folders = [root.as_uri()]      # as the server's initialize sets it
            try:
                prepared = engine.prepare()                 # as the server does once loaded
                if prepared.failed:                         # no trace could replay as asked
                    raise prepared.failed[0][1]
                self.datastore = engine.sources.datastore          # built once, for every trace
                session = _Session(trace, root, engine, self.checker, result,
                                   lambda: self.runtime.stats.seconds)
                session.spent_s = time.perf_counter() - t0
                session.model_s = self.runtime.stats.seconds - model_s0
                yield session
            finally:
                t1, model_s1 = time.perf_counter(), self.runtime.stats.seconds
                engine.shutdown()                           # its watchers
        result.total_ms = (session.spent_s + time.perf_counter() - t1) * 1000
        result.model_ms = (session.model_s + self.runtime.stats.seconds - model_s1) * 1000


class LspReplayer:
    """Replays traces through `inkling serve` over stdio, an LSP client in place of the Engine."""

    def __init__(self, options: InklingOptions, checker: SyntaxChecker):
        # lazy: the LSP client (pygls) slows the start of an in-process replay
        from inkling.lsp.lsp_engine import LspEngine
        self._tmp = tempfile.TemporaryDirectory(prefix="inkling-replay-lsp-")
        self.root = Path(self._tmp.name).resolve()
        self.options, self.checker = options, checker
        self.engine = LspEngine(options, self.root.as_uri())
        self._count = 0

    def replay(self, trace: Trace, tick: Tick = lambda n: None) -> TraceResult:
        with self.session(trace) as session:
            _run(session, tick)
        return session.result

    @contextlib.contextmanager
    def session(self, trace: Trace) -> Iterator[_Session]:
        """``trace``'s session in a new workspace folder; documents left open are closed after."""
        result = TraceResult(trace.source, trace.name)
        t0 = time.perf_counter()
        session = _Session(trace, self.trace_folder(), self.engine, self.checker, result)
        session.spent_s = time.perf_counter() - t0
        yield session
        t1 = time.perf_counter()
        for path in list(session.versions):            # leave the server as we found it
            self.engine.close(session.uri(path))
        result.total_ms = (session.spent_s + time.perf_counter() - t1) * 1000
        result.model_ms = sum(r.model_ms for r in result.completions)

    def trace_folder(self) -> Path:
        """A new folder, made the server's only workspace folder so no trace sees another's."""
        self._count += 1
        root = self.root / f"trace-{self._count}"
        root.mkdir()
        self.engine.workspace_folders = [root.as_uri()]
        return root

    def close(self) -> None:
        try:
            self.engine.shutdown()
        finally:
            self._tmp.cleanup()
