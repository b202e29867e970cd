"""The Engine: the one object the LSP server and the replay drive. Documents in (its editor
state, editor_state.py), completions out, stage by stage (stages.py). One thread drives an
Engine; only the workspace watcher's updates cross threads, under the Workspace's own lock."""
from __future__ import annotations

import time
from typing import Callable

from inkling.models import resolve_model_path
from inkling.runtime.load_heap import give_back
from inkling.runtime.model_loader import load_runtime
from inkling.runtime.model_runtime import ModelRuntime

from inkling.completion.cursor import Cursor
from inkling.completion.decoding.dispatch import decode_drafts
from inkling.completion.decoding.names import Trigger
from inkling.completion.decoding.plan import drafts_asked, plan_for
from inkling.completion.decoding.planned_request import (AtCursor, drafts_dropped_on_error,
                                                         planned_request)
from inkling.completion.decoding.stop_rules import stop_rule_for
from inkling.completion.document import Position
from inkling.completion.draft_book import DraftBook
from inkling.completion.drafting.acceptance import AcceptanceMeter
from inkling.completion.drafting.draft_mode import resolved
from inkling.completion.drafting.drafter import Lesson, drafting_for
from inkling.completion.editor_state import EditorState
from inkling.completion.open_analysis import wanted
from inkling.completion.options import InklingOptions
from inkling.completion.preparation import Prepared, prepare, uses_datastore
from inkling.completion.presentation import Presentation
from inkling.completion.progress import Progress
from inkling.completion.prompt.builder import fim_order, prompt_at
from inkling.completion.result import Completion, Draft, EngineStats
from inkling.completion.stages import (Asked, DecodedDrafts, Planned, Prompted, Shown, Synced,
                                       Times, completion_of)


class Engine:
    def __init__(self, options: InklingOptions | None = None, runtime=None, datastore=None,
                 load: Callable[..., ModelRuntime] = load_runtime):
        self.options = options = options or InklingOptions()
        options.validate()
        e = self.editor = EditorState(options, datastore)    # what the editor has open
        # the editor's state the server, the replay and the tools reach through the Engine
        self.documents, self.workspace, self.sources = e.documents, e.workspace, e.sources
        self.repo_context, self.document, self.document_sha256 = (
            e.repo_context, e.document, e.document_sha256)
        self.open, self.apply_change, self.close = e.open, e.apply_change, e.close
        self.workspace_file_changed, self.shutdown = e.workspace_file_changed, e.shutdown
        # ``load``: load_runtime's signature; a server's sessions pass a shared loader
        self._runtime, self._caches, self._load = runtime, e.caches, load
        self.book = DraftBook()
        self.stats = EngineStats()
        self.acceptance = AcceptanceMeter()        # sizes suffix drafts to what the model keeps
        self._unsettled: Lesson | None = None      # what the last completion teaches, if unlearnt

    @property
    def workspace_folders(self) -> list[str]:
        return self.editor.workspace_folders

    @workspace_folders.setter
    def workspace_folders(self, folders: list[str]) -> None:
        self.editor.workspace_folders = folders

    def configure(self, changes: dict) -> InklingOptions:
        """Apply option changes; raises OptionError and keeps the old options on a bad value."""
        new = self.options.merged(changes)
        if new.model != self.options.model:
            self._runtime = None
        self._caches.reconfigure(self.options, new)
        self.sources.reconfigure(new.completion.datastore)
        self.options = self.editor.options = new
        return new

    @property
    def model_loaded(self) -> bool:
        return self._runtime is not None

    def load_model(self, progress: Progress | None = None) -> ModelRuntime:
        if self._runtime is None:
            m = self.options.model
            self._runtime = self._load(resolve_model_path(m.path), m.device, m.dtype,
                                       progress, m.threads, m.forward, m.weights)
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

    def prepare(self, progress: Progress | None = None, measure: bool = True) -> Prepared:
        """Load the model and build, once, what completions search besides the document."""
        c = self.options.completion
        if wanted(c):
            self.editor.subscribe_analysis()       # the walk below feeds its symbol index
        runtime = self.load_model(progress)
        mode = resolved(self.options, runtime, self.acceptance.prior, measure=measure)
        return prepare(c, mode, self.sources, runtime, self.workspace, progress)

    def complete(self, uri: str, position: Position, k: int | None = None,
                 trigger: Trigger = Trigger.AUTOMATIC, cancelled: Callable[[], bool] = lambda: False
                 ) -> Completion:
        """Drafts at ``position`` (``k``: how many, else as many as ``trigger`` asks for:
        ``plan.drafts_asked``); a decoder gives fewer drafts, never padding."""
        extent = self.documents.take_extent(uri)
        try:
            self.settle()                     # a completion nobody settled teaches first
            t0, asked = time.perf_counter(), Asked(uri, position, Trigger(trigger), cancelled)
            at = Cursor.at(self.document(uri).snapshot(), uri, position, self.load_model())
            model_s0 = at.runtime.stats.seconds
            prompted = self._prompt(at)
            planned = self._plan(at, prompted, asked, k)
            synced = self._sync(at, prompted, planned, extent)
            first_ms = (time.perf_counter() - t0) * 1000
            decoded = self._decode(at, prompted, planned, synced, asked)
            shown = self._show(decoded)
            times = Times(first_ms, (time.perf_counter() - t0) * 1000,
                          (at.runtime.stats.seconds - model_s0) * 1000)
            done = completion_of(asked, prompted, planned, synced, decoded, shown, times)
        except BaseException:
            self.documents.give_back(uri, extent)
            raise
        self._unsettled = done.lesson
        return done

    def _prompt(self, at: Cursor) -> Prompted:
        block, c = self.editor.context_block(at), self.options.completion
        return Prompted(prompt_at(at.runtime, at.doc.text, at.offset, c, block.ids), block)

    def _plan(self, at: Cursor, prompted: Prompted, asked: Asked, k: int | None) -> Planned:
        """The decode plan, and the drafting it lets run (with its first draft tree)."""
        c, p, mode = self.options.completion, prompted.prompt, self.draft_mode(at.runtime)
        stop = stop_rule_for(p.line_prefix, p.prefix, p.line_suffix, p.suffix)
        plan = plan_for(c, asked.trigger, drafts_asked(c, asked.trigger, k), stop)
        drafting = drafting_for(mode, plan, p, at.runtime, self.acceptance,
                                lambda: self.editor.draft_sources(at))
        self.stats.undrafted += plan.drafting and mode == "suffix" and drafting.drafter is None
        return Planned(plan, drafting)

    def _sync(self, at: Cursor, prompted: Prompted, planned: Planned, extent) -> Synced:
        """The document's cache brought up to the prompt, the first draft tree run with it."""
        p, first = prompted.prompt, planned.drafting.first
        cache = self._caches.of(at.uri, at.runtime, self.options)
        edges = p.moved_edges(extent, at.runtime, fim_order(self.options.completion, at.runtime))
        result = cache.sync(p.ids, edges, (first.tokens, first.parents) if first else None)
        self.stats.refreshes += result.refreshed
        return Synced(cache, result, first, result.draft_logits)

    def _decode(self, at: Cursor, prompted: Prompted, planned: Planned, synced: Synced,
                asked: Asked) -> DecodedDrafts:
        (plan, drafting), p = planned, prompted.prompt
        with drafts_dropped_on_error(synced, len(p.ids)):      # the monitor may fail too
            monitor, guard = self.editor.monitor_and_guard(at)
            shows = Presentation(p, guard, at.doc.eol, self.options.completion.alternative_prune)
            near = AtCursor(monitor, shows, lambda: self.editor.ngram_sources(at))
            outs, forwards = decode_drafts(planned_request(plan, p, synced, drafting, near,
                                                           asked.cancelled), plan.decoder)
        self._caches.trim()
        self.sources.suggested(at.uri, p.prefix_ids, [o.token_ids for o in outs])
        lesson = drafting.lesson(plan.one, outs[0].token_ids if outs else [])
        return DecodedDrafts(outs, forwards, shows, lesson)

    def _show(self, decoded: DecodedDrafts) -> Shown:
        shown, dropped, cut = decoded.presentation.shown_drafts(decoded.outs)
        drafts = [self.book.offer(text, out.logprob, len(out.token_ids)) for text, out in shown]
        self.stats.completions += 1
        return Shown(drafts, dropped, cut)

    def settle(self) -> None:
        """Teach the drafter the last completion's lesson, once, after its answer; the next
        completion settles one nobody settled, so no lesson is lost or reordered."""
        lesson, self._unsettled = self._unsettled, None
        if lesson is not None:
            self.stats.learnt += lesson.learn()

    def accept(self, draft_id: str) -> Draft:
        """The user accepted a draft: the history drafting source searches it from now on."""
        draft = self.book.get(draft_id)
        self.stats.accepted += 1
        self.stats.accepted_chars += len(draft.text)
        if self._runtime is not None and draft.text:
            self.sources.accepted(self._runtime.encode(draft.text.replace("\r\n", "\n")))
        return draft

    def idle(self, quiet_ms: float) -> int:
        """Idle work after ``quiet_ms`` with no edit or completion: stale tokens recomputed,
        then the heap's free memory given back (a completion's temporaries, freed but kept)."""
        done = self._caches.refresh_idle(quiet_ms, self.options.cache.idle_refresh_ms) \
            if self._runtime is not None else 0
        self.stats.refreshes += done > 0
        give_back()
        return done
