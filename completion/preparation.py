"""What completions search besides the document, built once before the first (workspace index
and watcher, datastores); the server and the replay both prepare through ``Engine.prepare``."""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from inkling.analysis.workspace import Workspace
from inkling.runtime.load_heap import give_back
from inkling.runtime.model_runtime import ModelRuntime

from inkling.completion.decoding.names import Decoder, DraftMode
from inkling.completion.drafting.sources import DraftSources
from inkling.completion.errors import InklingError
from inkling.completion.open_analysis import vocabulary_and_origin
from inkling.completion.options import CompletionOptions
from inkling.completion.progress import Progress

@dataclass
class Prepared:
    """What ``prepare`` did: a line per step, and the steps that failed."""
    done: list[str] = field(default_factory=list)
    failed: list[tuple[str, InklingError | OSError]] = field(default_factory=list)


def uses_datastore(c: CompletionOptions, draft: str) -> bool:
    """Whether suffix drafting (``draft``, auto resolved) or superposed decoding reads one."""
    return c.datastore != "none" and (draft == DraftMode.SUFFIX
                                      or c.decoder == Decoder.SUPERPOSED)


def prepare(c: CompletionOptions, draft: str, sources: DraftSources, runtime: ModelRuntime,
            workspace: Workspace, progress: Progress | None = None) -> Prepared:
    """Build what ``c`` searches with drafting ``draft`` (auto resolved) and ``sources`` lacks;
    a step that fails is reported and the others still run."""
    report, steps = Prepared(), []
    if c.draft == DraftMode.AUTO:
        report.done.append(f"auto drafting: {draft}")
    if draft == DraftMode.SUFFIX:
        sources.index_workspace(workspace, runtime)
    if workspace.waiting and workspace.folders:
        steps.append(("workspace index", lambda: workspace.walk(progress).summary()))
    elif workspace.waiting:
        workspace.walk()                     # no folder yet: one added is walked for them
    if uses_datastore(c, draft):
        steps.append(("datastore", lambda: sources.build_datastore(   # another's build:
            c.datastore, runtime, progress, wait=False).summary()))   # serve without it
    if draft == DraftMode.SUFFIX:
        steps.append(("model datastore", lambda: _summary(sources.model_datastore(
            runtime, c.model_datastore), "no model datastore")))
    if c.monitor == "on":
        steps.append(("vocabulary index", lambda: _vocabulary_summary(runtime)))
    for name, step in steps:
        try:
            report.done.append(step())
        except (InklingError, OSError) as exc:
            report.failed.append((name, exc))
    give_back()                      # what the indexes' builds freed, kept by the heap
    if workspace.subscribers:
        workspace.start()
    return report


def _vocabulary_summary(runtime: ModelRuntime) -> str:
    t0 = time.perf_counter()
    vocab, cached = vocabulary_and_origin(runtime)
    how = "read from the cache" if cached else "indexed"
    return f"monitor vocabulary index: {vocab.size:,} ids, {how} in " \
           f"{time.perf_counter() - t0:.2f} s"


def _summary(store, none: str) -> str:
    return store.summary() if store is not None else none
