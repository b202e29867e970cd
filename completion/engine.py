"""The Engine: the one object the LSP server and the replay drive. Documents in,
completions out; what each step does lives in the packages beside it (prompt/, drafting/,
decoding/) and below it (cache/, analysis/). One thread drives an Engine (the server's
model worker, or the replay's loop); nothing in it is shared with another thread except
the workspace watcher's updates, which the Workspace hands over under its own lock."""
from __future__ import annotations

import time
from pathlib import Path
from typing import Callable

from inkling.analysis import CodeAnalysis
from inkling.analysis.workspace import Workspace
from inkling.cache.cache_pool import CachePool
from inkling.runtime.model_loader import load_runtime
from inkling.cache.prompt_cache import PromptCache
from inkling.runtime.model_runtime import ModelRuntime
from inkling.models import resolve_model_path

from .decoding.dispatch import decode_drafts
from .decoding.prompt_rules import with_prompt_rules
from .decoding.ranking import shortfall
from .decoding.request import DecodeRequest, seeded
from .decoding.rereading import Rereading
from .decoding.stop_rules import stop_rule_for
from .document import Document, Position, TextChange
from .draft_book import DraftBook
from .drafting.acceptance import AcceptanceMeter
from .drafting.draft_mode import resolved
from .drafting.drafter import TreeDrafter, drafter_for
from .drafting.sources import DraftSources
from .errors import OptionError
from .open_analysis import OpenAnalysis, wanted
from .open_documents import OpenDocuments
from .options import InklingOptions
from .preparation import Prepared, prepare, uses_datastore
from .presentation import shown_drafts, shown_text
from .prompt.builder import prompt_at
from .prompt.repo_context import RepoContext
from .result import Completion, Draft, EngineStats

Progress = Callable[[str, float], None]
MAX_DRAFTS = 16


class Engine:
    def __init__(self, options: InklingOptions | None = None, runtime=None, datastore=None):
        self.options = options or InklingOptions()
        self.options.validate()
        self._runtime = runtime
        self.documents = OpenDocuments()
        self._caches = CachePool(self.options.cache.budget_mb << 20, lambda c: c.nbytes())
        self.book = DraftBook()
        self.stats = EngineStats()
        self._folders: list[str] = []              # file:// URIs, from the editor
        self.workspace = Workspace()               # one walk and one watcher of the folders
        self._analysis = OpenAnalysis(self.workspace, self.documents)   # when first needed
        self.sources = DraftSources(datastore)     # what drafting searches
        self.acceptance = AcceptanceMeter()        # sizes suffix drafts to what the model keeps
        self.repo_context = RepoContext(self.documents.text_at)
        self._after: list[Callable[[], None]] = []  # work a completion leaves for after its answer

    # ----------------------------------------------------------- configuration
    def configure(self, changes: dict) -> InklingOptions:
        """Apply option changes; raises OptionError and keeps the old options on a bad value."""
        new = self.options.merged(changes)
        if new.model != self.options.model:
            self._runtime = None
            self._caches.clear()
        if (new.cache.mode, new.cache.stale_threshold, new.completion.fim_order) != (
                self.options.cache.mode, self.options.cache.stale_threshold,
                self.options.completion.fim_order):    # another order: every prompt moves
            self._caches.clear()
        self._caches.budget_bytes = new.cache.budget_mb << 20
        store = self.sources.datastore
        if store is not None and store.spec != new.completion.datastore:
            self.sources.datastore = None          # prepare() builds the new one
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
    def datastore(self):
        return self.sources.datastore              # the corpus datastore, once built

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

    # ---------------------------------------------------------------- analysis
    @property
    def workspace_folders(self) -> list[str]:
        return self._folders

    @workspace_folders.setter
    def workspace_folders(self, folders: list[str]) -> None:
        self._folders = list(folders)
        self.repo_context.set_folders(self._folders)
        self.workspace.set_folders(self._folders)  # a folder added is walked once prepared

    @property
    def analysis(self) -> CodeAnalysis:
        """tree-sitter documents and the symbol index (made when first needed)."""
        return self._analysis.get()

    def workspace_file_changed(self, path: str) -> None:
        """A file on disk changed (the replay's `file` events, the client's
        didChangeWatchedFiles): every index has it now, not when the watcher sees it."""
        self.workspace.file_changed(path)
        if self.options.completion.context in ("similar", "both"):
            self.repo_context.touch_file(Path(path))

    def shutdown(self) -> None:
        self.workspace.stop()

    # --------------------------------------------------------------- documents
    def open(self, uri: str, text: str, version: int = 0, language_id: str = "python") -> None:
        doc = self.documents.open(uri, text, version, language_id)
        self._analysis.opened(doc, self.options.completion)
        self.repo_context.touch(uri, lambda: doc.text)

    def apply_change(self, uri: str, changes: list[TextChange], version: int | None = None) -> None:
        doc = self.documents.apply(uri, changes, version)
        self._analysis.changed(doc, self.options.completion)
        self.repo_context.touch(uri, lambda: doc.text)

    def close(self, uri: str) -> None:
        self.documents.close(uri)
        self.sources.forget(uri)
        self.repo_context.forget(uri)
        self._analysis.closed(uri)

    def document(self, uri: str) -> Document:
        return self.documents.get(uri)

    def document_sha256(self, uri: str) -> str:
        return self.documents.sha256(uri)

    # -------------------------------------------------------------- completion
    def draft_count(self, trigger: str) -> int:
        """Drafts asked for: ``drafts`` when invoked, else ``automatic_drafts`` (only here)."""
        c = self.options.completion
        return c.drafts if trigger == "invoked" else c.automatic_drafts

    def complete(self, uri: str, position: Position, k: int | None = None,
                 trigger: str = "automatic", cancelled: Callable[[], bool] = lambda: False
                 ) -> Completion:
        """Drafts at ``position`` (``k``: how many, else ``draft_count(trigger)``); the
        greedy decoder gives one draft whatever k is (fewer drafts, never padding)."""
        extent = self.documents.take_extent(uri)
        try:
            return self._complete(uri, position, self.draft_count(trigger) if k is None else k,
                                  trigger, cancelled, extent)
        except BaseException:
            self.documents.give_back(uri, extent)
            raise

    def _complete(self, uri, position, k, trigger, cancelled, extent) -> Completion:
        t0 = time.perf_counter()
        self.settle()              # what the last completion left, if no one ran it since
        if not 1 <= k <= MAX_DRAFTS:
            raise OptionError(f"the number of drafts must be between 1 and {MAX_DRAFTS}, got {k}")
        doc = self.document(uri).snapshot()
        offset, c, runtime = doc.offset_at(position), self.options.completion, self.load_model()
        model_s0 = runtime.stats.seconds
        block = self.repo_context.at_cursor(c, doc, offset, runtime, self._analysis.get)
        prompt = prompt_at(runtime, doc.text, offset, c, block.ids)
        stop = stop_rule_for(prompt.line_prefix, prompt.prefix, prompt.line_suffix, prompt.suffix)
        cache = self._caches.get(uri, lambda: PromptCache(
            runtime, self.options.cache.mode, self.options.cache.stale_threshold,
            forward=self.options.model.forward))
        decoder = c.decoder if k > 1 or trigger == "invoked" else "greedy"   # typing: greedy
        budget, one = (c.max_block_tokens if stop.block else c.max_new_tokens), \
            decoder == "greedy" or (k == 1 and decoder != "beam")
        drafts = one or decoder not in ("superposed", "beam")     # their rows are not drafted
        mode = self.draft_mode(runtime)                     # auto: measured at load
        drafter = drafter_for(mode if drafts else "none", prompt, runtime, stop.block,
                              self.acceptance, lambda: self.sources.draft_sources(
                                  uri, doc.text, offset, runtime, c.model_datastore))
        self.stats.undrafted += drafts and mode == "suffix" and drafter is None
        first = drafter(drafter.context, budget) if drafter is not None and one else None
        order = c.fim_order if c.fim_order != "auto" else runtime.fim_order
        synced = cache.sync(prompt.ids, prompt.moved_edges(extent, runtime, order),
                            (first.tokens, first.parents) if first else None)
        self.stats.refreshes += synced.refreshed
        first_ms = (time.perf_counter() - t0) * 1000
        request = DecodeRequest(cache, synced.logits, stop, budget, runtime.stop_ids,
                                runtime.decode, k, cancelled, drafter=drafter,
                                context=drafter.context if drafter is not None else [],
                                first=first, first_logits=synced.draft_logits,
                                first_rows=synced.prefilled, floor=c.alternative_min_tokens,
                                temperature=c.alternative_temperature,
                                width=c.block_beam_width if stop.block else c.beam_width,
                                meter=self.acceptance if mode == "suffix" else None)
        if c.alternative_temperature:         # seeded by the prompt only where it samples
            request.generator = seeded(prompt.ids)
        if not drafts:
            request.context = list(prompt.prefix_ids)
            request.sources = self.sources.ngram_sources(uri, doc.text, offset, runtime)
        try:
            request.monitor, guard = self._analysis.at_cursor(doc, offset, runtime) \
                if c.monitor == "on" else (None, None)
            request.shown = lambda text: shown_text(text, prompt, guard)
            request.reread = Rereading.at(runtime, prompt, c) if decoder == "beam" else None
            request.monitor, request.decode = with_prompt_rules(
                request.monitor, request.decode, runtime, prompt, c.fill_blank_lines)
            outs, forwards = decode_drafts(request, decoder)
        except BaseException:
            if synced.draft_logits is not None:      # the draft's nodes may still be cached
                cache.truncate(len(prompt.ids))
            raise
        self._caches.trim()
        if drafter is not None and drafter.steps and one:
            self._after.append(lambda: self._learn(drafter, outs[0].token_ids))
        self.sources.suggested(uri, prompt.prefix_ids, [o.token_ids for o in outs])
        shown, dropped, cut = shown_drafts(outs, prompt, guard, doc.eol, c.alternative_prune)
        drafts = [self.book.offer(text, out.logprob, len(out.token_ids)) for text, out in shown]
        self.stats.completions += 1
        return Completion(
            uri, position, drafts, trigger, first_token_ms=first_ms,
            latency_ms=(time.perf_counter() - t0) * 1000,
            model_ms=(runtime.stats.seconds - model_s0) * 1000, forwards=forwards + 1,
            tokens=sum(len(o.token_ids) for o in outs), prefill_tokens=synced.prefilled,
            reused_tokens=synced.reused, stale_tokens=synced.stale, refreshed=synced.refreshed,
            cache_mode=synced.mode, stopped_by=outs[0].stopped_by if outs else "",
            block=stop.block, draft_ms=tuple(drafter.times) if drafter is not None else (),
            asked=k, dropped=tuple(dropped), context_tokens=len(block), context_text=block.text,
            guard=cut, shortfall=shortfall(k, len(outs), len(drafts), dropped,
                                           "greedy" if one else decoder))

    def _learn(self, drafter: TreeDrafter, output: list[int]) -> None:
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
        """Idle work after ``quiet_ms`` without an edit or a completion: once
        ``cache.idle_refresh_ms`` has passed (0: never), recompute the stale tokens of the
        most recent document's cache. The server calls it from a timer, the replay from
        its clock. Returns the tokens recomputed."""
        wait = self.options.cache.idle_refresh_ms
        if not wait or quiet_ms < wait or self._runtime is None:
            return 0
        cache = self._caches.most_recent()
        done = cache.refresh() if cache is not None else 0
        self.stats.refreshes += done > 0
        return done
