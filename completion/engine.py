"""The Engine: the one object the LSP server and the replay drive. Documents in,
completions out; each step lives in the packages beside it and below it; the documents and
folders the editor has open are its other half (editor_state.py). One thread drives an
Engine; only the workspace watcher's updates cross threads, under the Workspace's lock."""
from __future__ import annotations

import time
from typing import Callable

from inkling.models import resolve_model_path
from inkling.runtime.model_loader import load_runtime
from inkling.runtime.model_runtime import ModelRuntime

from inkling.completion.cursor import Cursor
from inkling.completion.decoding.dispatch import decode_drafts
from inkling.completion.decoding.plan import drafts_asked, plan_for
from inkling.completion.decoding.ranking import shortfall
from inkling.completion.decoding.planned_request import (AtCursor, drafts_dropped_on_error,
                                                         planned_request)
from inkling.completion.decoding.stop_rules import stop_rule_for
from inkling.completion.document import Position
from inkling.completion.document_caches import DocumentCaches
from inkling.completion.draft_book import DraftBook
from inkling.completion.drafting.acceptance import AcceptanceMeter
from inkling.completion.drafting.draft_mode import resolved
from inkling.completion.drafting.drafter import Drafting, drafting_for
from inkling.completion.editor_state import EditorState
from inkling.completion.open_analysis import wanted
from inkling.completion.options import InklingOptions
from inkling.completion.preparation import Prepared, prepare, uses_datastore
from inkling.completion.presentation import shown_drafts, shown_text
from inkling.completion.progress import Progress
from inkling.completion.prompt.builder import fim_order, prompt_at
from inkling.completion.result import Completion, Draft, EngineStats


class Engine(EditorState):
    def __init__(self, options: InklingOptions | None = None, runtime=None, datastore=None):
        options = options or InklingOptions()
        options.validate()
        super().__init__(options, datastore)
        self._runtime = runtime
        self._caches = DocumentCaches(options)
        self.book = DraftBook()
        self.stats = EngineStats()
        self.acceptance = AcceptanceMeter()        # sizes suffix drafts to what the model keeps
        self._after: list[Callable[[], None]] = []  # work a completion leaves for after its answer

    # ----------------------------------------------------------- configuration
    def configure(self, changes: dict) -> InklingOptions:
        """Apply option changes; raises OptionError and keeps the old options on a bad value."""
        new = self.options.merged(changes)
        if new.model != self.options.model:
            self._runtime = None
        self._caches.reconfigure(self.options, new)
        self.sources.reconfigure(new.completion.datastore)
        self.options = new
        return new

    @property
    def model_loaded(self) -> bool:
        return self._runtime is not None

    def load_model(self, progress: Progress | None = None) -> ModelRuntime:
        if self._runtime is None:
            m = self.options.model
            self._runtime = load_runtime(resolve_model_path(m.path), m.device, m.dtype,
                                         progress, m.threads, m.forward)
        return self._runtime

    def draft_mode(self, runtime: ModelRuntime) -> str:
        """``completion.draft`` as it runs on ``runtime`` (auto: measured at load)."""
        return resolved(self.options, runtime, self.acceptance.prior)

    @property
    def uses_datastore(self) -> bool:
        return uses_datastore(self.options.completion, self.draft_mode(self.load_model()))

    def build_datastore(self, progress: Progress | None = None):
        """The datastore ``completion.datastore`` names, built once and kept (None: none)."""
        return self.sources.build_datastore(self.options.completion.datastore,
                                            self.load_model(), progress)

    def prepare(self, progress: Progress | None = None) -> Prepared:
        """Load the model and build, once, what completions search besides the document
        (``preparation.prepare``): the workspace walked once for the symbol index (when
        the monitor or the imports context is on) and the drafting index, then watched;
        the datastores. The server and the replay both call it."""
        c = self.options.completion
        if wanted(c):
            self._analysis.subscribe()             # the walk below feeds its symbol index
        runtime = self.load_model(progress)
        return prepare(c, self.draft_mode(runtime), self.sources, runtime, self.workspace, progress)

    # -------------------------------------------------------------- completion
    def complete(self, uri: str, position: Position, k: int | None = None,
                 trigger: str = "automatic", cancelled: Callable[[], bool] = lambda: False
                 ) -> Completion:
        """Drafts at ``position`` (``k``: how many, else as many as ``trigger`` asks for:
        ``plan.drafts_asked``); one draft is decoded greedily but for an invoked beam
        search (``plan.decoder_for``), and a decoder gives fewer drafts, never padding."""
        extent = self.documents.take_extent(uri)
        try:
            return self._complete(uri, position, k, trigger, cancelled, extent)
        except BaseException:
            self.documents.give_back(uri, extent)
            raise

    def _complete(self, uri, position, k, trigger, cancelled, extent) -> Completion:
        t0 = time.perf_counter()
        self.settle()              # what the last completion left, if no one ran it since
        c, k = self.options.completion, drafts_asked(self.options.completion, trigger, k)
        doc = self.document(uri).snapshot()
        at = Cursor(uri, doc, doc.offset_at(position), self.load_model())
        model_s0 = at.runtime.stats.seconds
        block = self.repo_context.at_cursor(c, at.doc, at.offset, at.runtime, self._analysis.get)
        prompt = prompt_at(at.runtime, at.doc.text, at.offset, c, block.ids)
        plan = plan_for(c, trigger, k, stop_rule_for(prompt.line_prefix, prompt.prefix,
                                                     prompt.line_suffix, prompt.suffix))
        cache, drafting = self._caches.of(uri, at.runtime, self.options), self._drafting(at, plan,
                                                                                         prompt)
        first, order = drafting.first, fim_order(c, at.runtime)
        synced = cache.sync(prompt.ids, prompt.moved_edges(extent, at.runtime, order),
                            (first.tokens, first.parents) if first else None)
        self.stats.refreshes += synced.refreshed
        first_ms = (time.perf_counter() - t0) * 1000
        with drafts_dropped_on_error(cache, len(prompt.ids), synced):
            outs, forwards, guard = self._decode(at, plan, prompt, cache, synced, drafting,
                                                 cancelled)
        self._caches.trim()
        self._remember(at, plan, prompt, drafting, outs)
        shown, dropped, cut = shown_drafts(outs, prompt, guard, at.doc.eol, c.alternative_prune)
        drafts = [self.book.offer(text, out.logprob, len(out.token_ids)) for text, out in shown]
        self.stats.completions += 1
        return Completion(
            uri, position, drafts, trigger, first_token_ms=first_ms,
            latency_ms=(time.perf_counter() - t0) * 1000,
            model_ms=(at.runtime.stats.seconds - model_s0) * 1000, forwards=forwards + 1,
            tokens=sum(len(o.token_ids) for o in outs), prefill_tokens=synced.prefilled,
            reused_tokens=synced.reused, stale_tokens=synced.stale, refreshed=synced.refreshed,
            cache_mode=synced.mode, stopped_by=outs[0].stopped_by if outs else "",
            block=plan.block, asked=k, draft_ms=tuple(drafting.drafter.times)
            if drafting.drafter is not None else (),
            dropped=tuple(dropped), context_tokens=len(block), context_text=block.text,
            guard=cut, shortfall=shortfall(k, len(outs), len(drafts), dropped, plan.decoder))

    def _drafting(self, at: Cursor, plan, prompt) -> Drafting:
        mode = self.draft_mode(at.runtime)                  # auto: measured at load
        drafting = drafting_for(mode, plan, prompt, at.runtime, self.acceptance, lambda: self.
                                sources.draft_sources(at.uri, at.doc.text, at.offset, at.runtime,
                                                      self.options.completion.model_datastore))
        self.stats.undrafted += plan.drafting and mode == "suffix" and drafting.drafter is None
        return drafting

    def _decode(self, at: Cursor, plan, prompt, cache, synced, drafting, cancelled):
        """The drafts (best first), their forwards, the syntax guard (None: monitor off)."""
        monitor, guard = self._analysis.at_cursor(at.doc, at.offset, at.runtime) \
            if self.options.completion.monitor == "on" else (None, None)
        near = AtCursor(monitor, lambda text: shown_text(text, prompt, guard), lambda: self
                        .sources.ngram_sources(at.uri, at.doc.text, at.offset, at.runtime))
        outs, forwards = decode_drafts(planned_request(plan, prompt, cache, synced, drafting,
                                                       near, cancelled), plan.decoder)
        return outs, forwards, guard

    def _remember(self, at: Cursor, plan, prompt, drafting, outs) -> None:
        """The drafts offered are searched by later drafts; the meter learns from the first
        after the answer (``settle``)."""
        if drafting.drafter is not None and drafting.drafter.steps and plan.one:
            self._after.append(lambda: self._learn(drafting.drafter, outs[0].token_ids))
        self.sources.suggested(at.uri, prompt.prefix_ids, [o.token_ids for o in outs])

    def _learn(self, drafter, output: list[int]) -> None:
        self.stats.learnt += bool(drafter.learn(output))

    # -------------------------------------------------------------- after it
    def settle(self) -> None:
        """Run the work the last completion left for after its answer: the drafting
        meter learns from its output (about 1 ms with suffix drafting). The server runs
        it on the model worker once the answer is on its way, the replay once the
        completion is recorded; a completion runs what is left first."""
        while self._after:
            self._after.pop(0)()

    def accept(self, draft_id: str) -> Draft:
        """The user accepted a draft: the history drafting source searches it from now on."""
        draft = self.book.get(draft_id)
        self.stats.accepted += 1
        self.stats.accepted_chars += len(draft.text)
        if self._runtime is not None and draft.text:
            self.sources.accepted(self._runtime.encode(draft.text.replace("\r\n", "\n")))
        return draft

    def idle(self, quiet_ms: float) -> int:
        """Idle work (``DocumentCaches.refresh_idle``) after ``quiet_ms`` without an edit or
        a completion; the server calls it from a timer, the replay from its clock."""
        done = self._caches.refresh_idle(quiet_ms, self.options.cache.idle_refresh_ms) \
            if self._runtime is not None else 0
        self.stats.refreshes += done > 0
        return done
