"""The Engine: the one object the LSP server and the replay drive."""
from __future__ import annotations

import itertools
import logging
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from .document import Document, Position, TextChange
from .drafting.acceptance import AcceptanceMeter
from .edit_extent import EditExtent
from .errors import DocumentError, OptionError
from .options import InklingOptions

Progress = Callable[[str, float], None]
MAX_DRAFTS = 16
log = logging.getLogger("inkling.engine")


@dataclass(frozen=True)
class Draft:
    id: str
    text: str
    logprob: float
    tokens: int


@dataclass
class Completion:
    uri: str
    position: Position
    drafts: list[Draft]
    trigger: str
    first_token_ms: float = 0.0     # prompt built and cache brought up to date
    latency_ms: float = 0.0         # drafts ready
    model_ms: float = 0.0           # time inside model forward passes
    forwards: int = 0               # decoding forward passes
    tokens: int = 0                 # tokens emitted into drafts
    prefill_tokens: int = 0
    reused_tokens: int = 0
    stale_tokens: int = 0           # cached tokens computed against text that has changed
    refreshed: bool = False         # this completion recomputed stale tokens
    cache_mode: str = ""            # the mode that brought the cache up to date
    stopped_by: str = ""
    block: bool = False
    draft_ms: tuple[float, ...] = ()   # each retrieval drafting step (search and tree), in ms
    asked: int = 1                  # drafts asked for (k)
    dropped: tuple = ()             # draft_ranking.Dropped: decoded drafts not worth showing
    shortfall: str = ""             # why fewer than ``asked`` drafts are shown ("" if none)
    context_tokens: int = 0         # tokens of the repository-context block in the prompt
    context_text: str = ""          # that block as the model read it


@dataclass
class EngineStats:
    completions: int = 0
    accepted: int = 0
    accepted_chars: int = 0
    refreshes: int = 0          # stale caches recomputed (during syncs and in idle time)
    learnt: int = 0             # completions the drafting meter has learnt from


def _moved_edges(extent: EditExtent, prompt, runtime, order: str) -> tuple[tuple[int, int], ...]:
    """Zones of the prompt's window edges with no edit there since the last sync (a
    change of tokens there is the window moving: what follows is shifted, not stale)."""
    front, end = prompt.edge_zones(runtime, order)
    edges = []
    if extent.front_untouched(prompt.first_line):
        edges.append(front)
    if end is not None and extent.end_untouched(prompt.lines_below):
        edges.append(end)
    return tuple(edges)


class Engine:
    def __init__(self, options: InklingOptions | None = None, runtime=None, datastore=None):
        from inkling.cache.cache_pool import CachePool
        self.options = options or InklingOptions()
        self.options.validate()
        self._runtime = runtime
        self._documents: dict[str, Document] = {}
        self._caches = CachePool(self.options.cache.budget_mb << 20, lambda c: c.nbytes())
        self._drafts: OrderedDict[str, Draft] = OrderedDict()
        self._ids = itertools.count(1)
        self.stats = EngineStats()
        self._folders: list[str] = []            # file:// URIs, from the editor
        self._analysis = None                    # CodeAnalysis, once the monitor is on
        self.workspace = None                    # a WorkspaceIndex once indexed
        self._history = None                     # accepted completions (a SuffixIndex)
        self._doc_indexes: dict[str, tuple[str, int, object]] = {}
        self._extents: dict[str, EditExtent] = {}  # edits since each document's last sync
        self._doc_tokens = None                    # DocumentTokens: paragraphs tokenized once
        self.acceptance = AcceptanceMeter()        # sizes suffix drafts to what the model keeps
        self._line_end_ids: frozenset[int] | None = None
        self._suggestions: dict[str, object] = {}  # uri -> SuggestionHistory (a drafting source)
        self.datastore = datastore                 # a Datastore (drafting source), once built
        self._warned: set = set()                  # problems logged once
        # work a completion leaves for after its answer (learning from its output)
        self._after: list[Callable[[], None]] = []
        from .prompt.repo_context import RepoContext
        self.repo_context = RepoContext()          # recent files, the last context blocks

    # ----------------------------------------------------------- configuration
    def configure(self, changes: dict) -> InklingOptions:
        """Apply option changes; raises OptionError and keeps the old options on a bad value."""
        new = self.options.merged(changes)
        if new.model != self.options.model:
            self._runtime = None
            self._caches.clear()
        if (new.cache.mode, new.cache.stale_threshold) != (self.options.cache.mode,
                                                           self.options.cache.stale_threshold):
            self._caches.clear()
        self._caches.budget_bytes = new.cache.budget_mb << 20
        if self.datastore is not None and self.datastore.spec != new.completion.datastore:
            self.datastore = None                  # the server builds the new one
        self.options = new
        return new

    @property
    def model_loaded(self) -> bool:
        return self._runtime is not None

    def load_model(self, progress: Progress | None = None):
        if self._runtime is None:
            from inkling.cache.model_loader import load_runtime
            m = self.options.model
            self._runtime = load_runtime(resolve_model_path(m.path), m.device, m.dtype, progress,
                                         m.threads)
        return self._runtime

    # ---------------------------------------------------------------- analysis
    @property
    def workspace_folders(self) -> list[str]:
        return self._folders

    @workspace_folders.setter
    def workspace_folders(self, folders: list[str]) -> None:
        self._folders = list(folders)
        if self._analysis is not None:
            self._analysis.set_workspace_folders(self._folders)

    @property
    def analysis(self):
        """tree-sitter documents and the symbol index (made when the monitor is first on)."""
        if self._analysis is None:
            from inkling.analysis import AnalysisOptions, CodeAnalysis
            self._analysis = CodeAnalysis(AnalysisOptions())
            self._analysis.set_workspace_folders(self._folders)
            for doc in self._documents.values():
                self._analysis.open(doc.uri, doc.text, doc.language_id)
        return self._analysis

    def shutdown(self) -> None:
        if self._analysis is not None:
            self._analysis.shutdown()
        if self.workspace is not None:
            self.workspace.stop()

    # --------------------------------------------------------------- documents
    def open(self, uri: str, text: str, version: int = 0, language_id: str = "python") -> None:
        self._documents[uri] = Document(uri, text, version, language_id)
        self._extents[uri] = EditExtent(0, 0)      # a new text: nothing in a cache is current
        c = self.options.completion
        if self._analysis is not None or c.monitor == "on" or c.context in ("imports", "both"):
            self.analysis.open(uri, text, language_id)
        self._touched(uri)

    def apply_change(self, uri: str, changes: list[TextChange], version: int | None = None) -> None:
        doc = self.document(uri)
        doc.apply(changes, version, self._extents.setdefault(uri, EditExtent()))
        if self._analysis is not None:             # tree.edit and an incremental reparse
            self._analysis.change(uri, doc.text)
            if self.options.completion.monitor == "on":
                self._analysis.prepare(uri)        # the monitor's symbols, before it is asked
        self._touched(uri)

    def _touched(self, uri: str) -> None:
        """``uri`` was opened or edited: a recent file for the context block."""
        from .prompt.repo_context import relative, uri_path
        path = uri_path(uri)
        doc = self._documents[uri]
        self.repo_context.recent.touch(uri, relative(path, self._roots()) if path else uri,
                                       lambda: doc.text)

    def _roots(self) -> list[Path]:
        from .prompt.repo_context import uri_path
        return [p.resolve() for p in (uri_path(u) for u in self._folders) if p is not None]

    def close(self, uri: str) -> None:
        self.document(uri)
        del self._documents[uri]
        self._doc_indexes.pop(uri, None)
        self._extents.pop(uri, None)
        self._suggestions.pop(uri, None)
        self.repo_context.forget(uri)
        if self._analysis is not None:
            self._analysis.close(uri)

    def document(self, uri: str) -> Document:
        try:
            return self._documents[uri]
        except KeyError:
            raise DocumentError(f"unknown document {uri} (it was never opened, or was closed)") \
                from None

    def document_sha256(self, uri: str) -> str:
        import hashlib
        return hashlib.sha256(self.document(uri).text.encode("utf-8")).hexdigest()

    def documents(self) -> list[str]:
        return list(self._documents)

    # -------------------------------------------------------------- completion
    def complete(self, uri: str, position: Position, k: int | None = None,
                 trigger: str = "automatic", cancelled: Callable[[], bool] = lambda: False
                 ) -> Completion:
        # edits from here on count for the next sync (taken before the snapshot, so none
        # is lost); a completion that fails gives them back
        extent = self._extents.pop(uri, None) or EditExtent()
        try:
            return self._complete(uri, position, k, trigger, cancelled, extent)
        except BaseException:
            if uri in self._documents:
                self._extents.setdefault(uri, EditExtent()).note(extent.first_line,
                                                                 extent.lines_below)
            raise

    def _complete(self, uri: str, position: Position, k: int | None, trigger: str,
                  cancelled: Callable[[], bool], extent: EditExtent) -> Completion:
        from inkling.cache.prompt_cache import PromptCache

        from .prompt.builder import budgets, build_prompt
        from .decoding.stop_rules import stop_rule_for, trim_repeated_suffix

        t0 = time.perf_counter()
        self.settle()              # what the last completion left, if no one ran it since
        doc = self.document(uri).snapshot()
        offset = doc.offset_at(position)
        c = self.options.completion
        k = k if k is not None else (c.drafts if trigger == "invoked" else c.automatic_drafts)
        if not 1 <= k <= MAX_DRAFTS:
            raise OptionError(f"the number of drafts must be between 1 and {MAX_DRAFTS}, got {k}")
        # the greedy decoder gives one draft whatever k is (fewer drafts, never padding)
        runtime = self.load_model()
        model_s0 = runtime.stats.seconds
        text = doc.text
        order = c.fim_order if c.fim_order != "auto" else runtime.fim_order
        block = self._context_block(uri, text, offset, runtime)
        pre_budget, suf_budget = budgets(runtime, c.prefix_tokens, c.suffix_tokens,
                                         c.max_block_tokens, -(-len(block) // 32) * 32)
        prompt = build_prompt(runtime, text[:offset], text[offset:], pre_budget, suf_budget, order,
                              c.window_step, block.ids)
        stop = stop_rule_for(prompt.line_prefix, prompt.prefix, prompt.line_suffix, prompt.suffix)
        prompt, healed = self._heal(prompt, runtime, order)
        o = self.options.cache
        cache = self._caches.get(uri, lambda: PromptCache(runtime, o.mode, o.stale_threshold,
                                                          forward=self.options.model.forward))
        budget = c.max_block_tokens if stop.block else c.max_new_tokens
        drafting, first = (None, []), None
        if c.draft != "none":
            drafting = self._drafter(c.draft, uri, doc, offset, prompt, stop.block)
            if c.decoder == "greedy" or k == 1:     # drafted after the prompt, verified with it
                first = drafting[0](drafting[1], budget)
        synced = cache.sync(prompt.ids, _moved_edges(extent, prompt, runtime, order),
                            (first.tokens, first.parents) if first else None)
        self.stats.refreshes += synced.refreshed
        first_ms = (time.perf_counter() - t0) * 1000
        try:
            monitor, guard = self._monitor(uri, offset, doc, runtime)
            decode = runtime.decode
            if healed:
                from .decoding.healing import Healing, healed_decode
                monitor = Healing(self._texts(runtime), healed, monitor)
                decode = healed_decode(runtime.decode, healed)
            outs, forwards = self._decode(k, cache, synced, stop, budget, uri, doc, offset,
                                          prompt, cancelled, monitor, decode, drafting, first)
        except BaseException:
            if synced.draft_logits is not None:      # the draft's nodes may still be cached
                cache.truncate(len(prompt.ids))
            raise
        self._caches.trim()
        if getattr(drafting[0], "steps", None) and (c.decoder == "greedy" or k == 1):
            steps, output = drafting[0].steps, outs[0].token_ids
            self._after.append(lambda: self._learn(steps, output))
        self._suggested(uri, prompt.prefix_ids, outs)
        texts = []
        for out in outs:
            text = trim_repeated_suffix(out.text, prompt.line_suffix, prompt.suffix)
            if guard is not None:                 # no new ERROR or MISSING node in its statement
                text = text[:guard.longest_valid_prefix(text)]
            texts.append(text)
        # several drafts: only alternatives worth showing (no blank, repeated, whitespace-only,
        # prefix or sub-word ones), each one left out with its reason
        from .decoding.ranking import shortfall, worth_showing
        shown, dropped = worth_showing(texts)
        drafts = []
        for i in shown:
            text, out = texts[i], outs[i]
            if doc.eol != "\n":
                text = text.replace("\n", doc.eol)
            drafts.append(self._remember(Draft(f"d{next(self._ids)}", text, out.logprob,
                                               len(out.token_ids))))
        self.stats.completions += 1
        return Completion(uri, position, drafts, trigger, first_token_ms=first_ms,
                          latency_ms=(time.perf_counter() - t0) * 1000,
                          model_ms=(runtime.stats.seconds - model_s0) * 1000,
                          forwards=forwards + 1, tokens=sum(len(o.token_ids) for o in outs),
                          prefill_tokens=synced.prefilled, reused_tokens=synced.reused,
                          stale_tokens=synced.stale, refreshed=synced.refreshed,
                          cache_mode=synced.mode,
                          stopped_by=outs[0].stopped_by if outs else "", block=stop.block,
                          draft_ms=tuple(getattr(drafting[0], "times", ())), asked=k,
                          dropped=tuple(dropped),
                          shortfall=shortfall(k, len(outs), len(drafts), dropped,
                                              "greedy" if k == 1 else c.decoder),
                          context_tokens=len(block), context_text=block.text)

    def _context_block(self, uri: str, text: str, offset: int, runtime):
        """The repository-context block at the cursor (``completion.context``), within its
        share of the prompt window; empty when off."""
        from .prompt.context_block import EMPTY
        from .prompt.builder import prompt_room
        c = self.options.completion
        if c.context == "off":
            return EMPTY
        budget = int(prompt_room(runtime, c.max_block_tokens) * c.context_share)
        analysis = self.analysis if c.context in ("imports", "both") else None
        return self.repo_context.block(c.context, uri, text, offset, runtime, budget,
                                       self._roots(), analysis, self._open_text)

    def _open_text(self, path: Path) -> str | None:
        """The text of the open document at ``path``, or None."""
        from .prompt.repo_context import uri_path
        for uri, doc in self._documents.items():
            if uri_path(uri) == path:
                return doc.text
        return None

    def _monitor(self, uri: str, offset: int, doc: Document, runtime):
        """(monitor state, syntax guard) at the cursor when the monitor is on, else Nones.
        Analysis never raises into decoding: what it cannot resolve is unconstrained."""
        if self.options.completion.monitor != "on":
            return None, None
        an = self.analysis
        vocab = an.vocabulary(runtime.tokenizer, runtime.vocab_size)
        return an.monitor(uri, offset, vocab, text=doc.text), an.guard(uri, offset)

    def _heal(self, prompt, runtime, order: str):
        """(prompt without its last token before the cursor, that token's text) when token
        healing is on; else (prompt, "")."""
        if not self.options.completion.token_healing or len(prompt.prefix_ids) < 2:
            return prompt, ""
        healed = runtime.decode(prompt.prefix_ids[-1:])
        if not healed or "\ufffd" in healed:
            return prompt, ""
        return prompt.with_fim(runtime, order, prompt.prefix_ids[:-1]), healed

    def _texts(self, runtime):
        if getattr(self, "_token_texts", None) is None or self._token_texts[0] is not runtime:
            from .decoding.healing import TokenTexts
            self._token_texts = (runtime, TokenTexts(runtime.tokenizer, runtime.vocab_size))
        return self._token_texts[1]

    def _decode(self, k, cache, synced, stop, budget, uri, doc, offset, prompt, cancelled,
                monitor, decode, drafting, first):
        """Decoded drafts (best first) and the decoding forward passes they took.
        ``drafting``: (drafter, context) or (None, []) without drafting; ``first``: the
        draft tree that ran with the prompt when ``synced.draft_logits`` holds its rows."""
        from .decoding.branches import branch_decode, sequential_decode
        from .decoding.greedy import greedy_decode
        from .decoding.ranking import rank_drafts
        from .decoding.speculative import speculative_decode
        c, runtime = self.options.completion, self._runtime
        args = (runtime.stop_ids, decode)
        logits = synced.logits
        if c.decoder == "greedy" or k == 1:
            if c.draft == "none":
                out = greedy_decode(cache, logits, stop, budget, *args, cancelled, monitor)
            else:
                out = speculative_decode(cache, logits, stop, budget, *args, *drafting,
                                         cancelled, monitor,
                                         self.acceptance if c.draft == "suffix" else None,
                                         first, synced.draft_logits, synced.prefilled)
            return [out], out.forwards
        if c.decoder == "branches":
            outs, forwards = branch_decode(cache, logits, k, stop, budget, *args, cancelled,
                                           monitor, *drafting)
        elif c.decoder == "sequential":
            outs, forwards = sequential_decode(cache, logits, k, stop, budget, *args, cancelled,
                                               monitor, *drafting)
        else:
            from .decoding.superposed import superposed_decode
            sources = self._sources(uri, doc, offset)
            if self.datastore is not None:         # corpus n-gram counts
                sources["datastore"] = self.datastore
            outs, forwards = superposed_decode(cache, logits, k, stop, budget, *args,
                                               sources, list(prompt.prefix_ids),
                                               cancelled, monitor)
        return rank_drafts(outs)[:k], forwards          # a decoder may end more than k

    def settle(self) -> None:
        """Run the work the last completion left for after its answer: the drafting
        meter learns from its output (about 1 ms with suffix drafting). The server runs
        it on the model worker once the answer is on its way, the replay once the
        completion is recorded; a completion runs what is left first."""
        while self._after:
            self._after.pop(0)()

    def accept(self, draft_id: str) -> Draft:
        """Record that the user accepted a draft (feeds the drafting history later)."""
        try:
            draft = self._drafts[draft_id]
        except KeyError:
            raise DocumentError(f"unknown draft id {draft_id!r} (too old, or never offered)") \
                from None
        self.stats.accepted += 1
        self.stats.accepted_chars += len(draft.text)
        if self._runtime is not None and draft.text:
            self.history.append(self._runtime.encode(draft.text.replace("\r\n", "\n")))
        return draft

    # ---------------------------------------------------------------- drafting
    @property
    def history(self):
        """Accepted completions, a drafting source."""
        if self._history is None:
            from .drafting.suffix_index import SuffixIndex
            self._history = SuffixIndex(min_merge=512)
        return self._history

    def index_workspace(self, progress: Progress | None = None):
        """Index the workspace folders for drafting and watch them; returns the report."""
        from urllib.parse import unquote, urlparse

        from .drafting.workspace_index import WorkspaceIndex
        runtime = self.load_model()
        roots = [Path(unquote(urlparse(u).path)) for u in self.workspace_folders]
        index = WorkspaceIndex(runtime.encode_batch)
        report = index.index_folders(roots, progress)
        if self.workspace is not None:
            self.workspace.stop()
        self.workspace = index
        return report

    @property
    def uses_datastore(self) -> bool:
        """Whether the options search a datastore: suffix drafting does, and superposed
        decoding takes n-gram counts from it."""
        c = self.options.completion
        return c.datastore != "none" and (c.draft == "suffix" or c.decoder == "superposed")

    def build_datastore(self, progress: Progress | None = None):
        """Build the datastore ``completion.datastore`` names (None for ``none``); it is kept
        and searched by the suffix drafter from then on."""
        from .drafting.datastore import build_datastore
        runtime = self.load_model()
        spec = self.options.completion.datastore
        if self.datastore is None or self.datastore.spec != spec:
            self.datastore = build_datastore(spec, runtime.tokenizer.to_str(),
                                             runtime.encode_batch, progress)
        return self.datastore

    def load_model_datastore(self):
        """The model datastore ``completion.model_datastore`` names (None for ``none``, or
        for ``auto`` when the model folder has none), loaded once per model and file.
        A named file that is missing, corrupt or another model's raises OptionError; the
        model folder's own file, found by ``auto``, is skipped with a warning instead."""
        from .drafting import model_datastore as md
        runtime = self.load_model()
        spec = self.options.completion.model_datastore
        path = md.resolve(spec, runtime.path)
        if path is None:
            return None
        try:
            key = ("model_datastore", str(path.resolve()), path.stat().st_mtime_ns)
        except OSError as exc:
            raise OptionError(f"model datastore {path}: {exc.strerror}") from None
        if key not in runtime.attached:            # the store, or why it cannot be used
            try:
                runtime.attached[key] = md.load(path, runtime.path)
            except OptionError as exc:
                runtime.attached[key] = exc
        found = runtime.attached[key]
        if not isinstance(found, OptionError):
            return found
        if spec != "auto":
            raise found
        if key not in self._warned:
            self._warned.add(key)
            log.warning("%s; drafting goes on without it", found)
        return None

    def workspace_file_changed(self, path: str) -> None:
        """A file on disk changed (the replay's `file` events; watchdog does it in the server)."""
        if self.workspace is not None:
            self.workspace.update_file(path)
        if self._analysis is not None:             # indexed now, not when watchdog sees it
            self._analysis.index_file(path)
        if self.options.completion.context in ("similar", "both"):
            self._recent_file(Path(path))

    def _recent_file(self, path: Path) -> None:
        """A file changed on disk: a recent file for the context block (its text as read)."""
        from .prompt.repo_context import relative
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return
        self.repo_context.recent.touch(path.resolve().as_uri(),
                                       relative(path.resolve(), self._roots()), lambda: text)

    def _drafter(self, mode: str, uri: str, doc: Document, offset: int, prompt, block: bool):
        """(drafter, context) for speculative decoding in ``mode`` at ``offset``."""
        from .drafting.draft_tree import EMPTY
        from .drafting.prompt_lookup import prompt_lookup
        from .drafting.suffix_drafter import SuffixDrafter, pick
        runtime = self._runtime
        ends = runtime.stop_ids if block else runtime.stop_ids | self.line_end_ids()
        if mode == "prompt-lookup":
            return (lambda ctx, budget: prompt_lookup(ctx, budget, ends)), list(prompt.ids)
        sources = self._sources(uri, doc, offset)
        if uri in self._suggestions:
            sources["suggestions"] = self._suggestions[uri]
        if self.datastore is not None:
            sources["datastore"] = self.datastore
        model_store = self.load_model_datastore()
        if model_store is not None:
            sources["model"] = model_store
        drafter = SuffixDrafter(sources)
        prefix = list(prompt.prefix_ids)
        meter = self.acceptance

        def draft(ctx: list[int], budget: int):
            t0 = time.perf_counter()
            try:
                return step(ctx, budget)
            finally:
                times.append((time.perf_counter() - t0) * 1000)

        def step(ctx: list[int], budget: int):
            searched = meter.admitted(drafter.names())
            if not searched:
                return EMPTY
            spent: dict[str, float] = {}
            found = drafter.candidates(ctx, budget, ctx[len(prefix):],
                                       lambda source: meter.limits(drafter.limits, source),
                                       searched, spent)
            meter.searched(spent)
            tree = pick(found, ends, meter.value)
            if tree.tokens and not meter.pays(tree):
                tree = EMPTY
            steps.append((len(ctx) - len(prefix), found, set(spent),
                          tree.source if tree.tokens else ""))
            return tree
        # (tokens generated, candidates, sources searched, source of the tree verified)
        steps: list[tuple[int, list, set[str], str]] = []
        times: list[float] = []             # ms of each step, searched or not
        draft.steps, draft.times = steps, times
        return draft, prefix

    def _learn(self, steps: list[tuple[int, list, set[str], str]], output: list[int]) -> None:
        """Score every drafting step of a finished completion against its greedy output
        (``steps``: tokens generated before each draft, its candidates, the sources
        searched, and the source of the tree verified, whose acceptance was recorded
        then): see ``AcceptanceMeter.learn_step``. A source passed over at a step is
        recorded with what its best candidate would have kept."""
        meter = self.acceptance
        self.stats.learnt += 1
        for at, candidates, searched, verified in steps:
            if at > len(output):
                continue
            best = meter.learn_step(candidates, searched, output[at:])
            for source, n in best.items():
                if source != verified:
                    meter.record(n, source, verified=False)

    def _sources(self, uri: str, doc: Document, offset: int) -> dict:
        """The suffix indexes drafts and n-gram counts come from: the document (its index
        rebuilt lazily when the text or the cursor changed, from paragraphs tokenized
        once), the workspace, accepted completions.

        The document is indexed as two sequences, the text before the cursor and the text
        after it: the text before the cursor always matches the context at the cursor
        itself, at full length, and what follows there is the text the completion goes
        in front of, which the model seldom writes (its drafts kept 8 tokens in 60)."""
        from .prompt.builder import normalise_eol
        from .drafting.suffix_index import LazyIndex, SuffixIndex
        cached = self._doc_indexes.get(uri)
        if cached is None or cached[0] is not doc.text or cached[1] != offset:
            if self._doc_tokens is None or self._doc_tokens.encode != self._runtime.encode:
                from .drafting.document_tokens import DocumentTokens
                self._doc_tokens = DocumentTokens(self._runtime.encode)
            tokens = self._doc_tokens

            def build() -> SuffixIndex:
                index = SuffixIndex(layout="hashed")      # rebuilt at every completion
                index.put_many([(f"{uri}#before", tokens.ids(normalise_eol(doc.text[:offset]))),
                                (f"{uri}#after", tokens.ids(normalise_eol(doc.text[offset:])))])
                return index
            # built when first searched: drafting searches the document only where it pays
            cached = self._doc_indexes[uri] = (doc.text, offset, LazyIndex(build))
        sources = {"document": cached[2], "history": self.history}
        if self.workspace is not None:
            sources["workspace"] = self.workspace
        return sources

    def _suggested(self, uri: str, prefix_ids, outs) -> None:
        """Keep the drafts just made as the document's most recent suggestions."""
        from .drafting.suggestion_history import SuggestionHistory
        history = self._suggestions.get(uri)
        if history is None:
            history = self._suggestions[uri] = SuggestionHistory()
        for out in outs:
            history.add(list(prefix_ids), out.token_ids)

    def line_end_ids(self) -> frozenset[int]:
        """The ids of the tokens whose text holds a line end."""
        if self._line_end_ids is None:
            tokenizer = self.load_model().tokenizer
            self._line_end_ids = frozenset(
                i for i in range(tokenizer.get_vocab_size()) if "\n" in tokenizer.decode([i]))
        return self._line_end_ids

    def _remember(self, draft: Draft) -> Draft:
        self._drafts[draft.id] = draft
        while len(self._drafts) > 256:
            self._drafts.popitem(last=False)
        return draft

    def refresh_idle(self) -> int:
        """Idle-time work: recompute the stale tokens of the most recent document's cache."""
        cache = self._caches.most_recent()
        done = cache.refresh() if cache is not None else 0
        self.stats.refreshes += done > 0
        return done


def resolve_model_path(path: str) -> Path:
    if path:
        return Path(path)
    from inkling.models import BUNDLED_MODEL_DIR
    return BUNDLED_MODEL_DIR
