"""Loading the model, preparing drafting and timing ``completion.draft auto`` as jobs on the
model worker, with progress and status; a failure is shown once and the server keeps serving.
The timing comes after "ready", a round per job, so that no completion waits for it."""
from __future__ import annotations

import gc

from lsprotocol import types as lsp

from inkling.completion.decoding.names import DraftMode
from inkling.completion.drafting.draft_mode import DraftState, known, measuring
from inkling.completion.errors import InklingError
from inkling.completion.model_report import model_description
from inkling.runtime.errors import ModelError

from inkling.lsp.language_server import InklingServer
from inkling.lsp.progress import WorkDoneProgress


async def load_model(ls: InklingServer) -> None:
    """Load the model, then prepare drafting: status "ready", or "error" if it cannot load."""
    progress = WorkDoneProgress(ls, "load", "loading")
    await progress.begin("inkling: loading model")
    ls.status("loading", "loading model", 0)
    try:
        runtime = await ls.worker.run(ls.engine.load_model, progress.report)
    except (ModelError, InklingError) as exc:
        progress.end("failed")
        ls.status("error", str(exc))
        ls.show_once(f"inkling: {exc}")
        return
    progress.end("ready")
    await prepare_drafting(ls)
    ls.log(await ls.worker.run(_loaded_line, ls.engine))
    # long-lived objects out of the collector's sweeps (docs/decisions/keystroke-work.md)
    gc.freeze()
    ls.status("ready", f"model {runtime.path.name} ready: "
              f"{ls.engine.options.mechanisms_text()}")
    await time_drafting(ls)


async def prepare_drafting(ls: InklingServer) -> None:
    """Build what completions search besides the document (``Engine.prepare``); a step that
    fails is shown once and the others still run."""
    progress = WorkDoneProgress(ls, "prepare", "indexing")
    await progress.begin("inkling: indexing")
    try:
        report = await ls.worker.run(ls.engine.prepare, progress.report, False)  # untimed
    except (OSError, InklingError) as exc:
        progress.end("failed")
        ls.show_once(f"inkling: indexing failed: {exc}")
        return
    progress.end("; ".join(report.done) or "nothing to index")
    for line in report.done:
        ls.log(line)
    for step, exc in report.failed:
        ls.show_once(f"inkling: {step} not built: {exc}")


def _loaded_line(engine) -> str:
    """The load's choices as one log line (a job on the model worker)."""
    line = model_description(engine.options, engine.load_model(),
                             engine.acceptance.prior).line()
    return line.removeprefix("inkling: ") + " loaded"


async def time_drafting(ls: InklingServer) -> None:
    """Time ``completion.draft auto``'s forwards where nothing is kept or cached: one round
    per model-worker job, each queued once the last has run, so a completion queued meanwhile
    runs between two rounds. Until it lands auto drafts none ("not measured yet"); from the
    next completion on, what it decided; a decision to draft then builds what drafting reads."""
    steps = await ls.worker.run(_timing_steps, ls.engine, ls.worker)
    if steps is None:
        return
    runtime, rounds = steps
    ls.log(TIMING_LINE)
    choice = None
    try:
        while choice is None and not ls.worker.closed:
            choice = await ls.worker.run(_timing_step, ls.engine, runtime, rounds)
    except (ModelError, InklingError, OSError, RuntimeError) as exc:
        ls.log(f"{TIMING_FAILED} ({exc}); drafting stays none",
               lsp.MessageType.Warning)
        return
    if choice is None or choice is _STOPPED:
        return
    ls.log(f"model {runtime.path}: drafting {choice.mode} ({choice.state}: {choice.reason})")
    if choice.mode == DraftMode.SUFFIX:
        await prepare_drafting(ls)


TIMING_LINE = "completion.draft auto: timing forwards between completions"
TIMING_FAILED = "completion.draft auto: timing failed"
_STOPPED = object()      # the model the timing ran on was replaced


def _timing_steps(engine, worker):
    """(runtime, the timing's steps) where auto has nothing kept or cached and no open session
    times it already, else None (a job on the model worker). The runtime names the session's
    worker that times it, so a session that ends mid-way leaves the timing to the next."""
    o = engine.options
    if not engine.model_loaded or o.completion.draft != DraftMode.AUTO:
        return None
    runtime, forward, prior = engine.load_model(), o.model.forward, engine.acceptance.prior
    timing = ("draft_timing", runtime.forward_kind(forward))      # once per forward
    timer = runtime.attached.get(timing)
    if (timer is not None and not timer.closed) or known(runtime, forward, prior).state != \
            DraftState.NOT_MEASURED:
        return None
    runtime.attached[timing] = worker
    return runtime, measuring(runtime, forward, prior)


def _timing_step(engine, runtime, rounds):
    """One round of the timing (a job on the model worker): None, the choice once it lands,
    or _STOPPED where another model has been loaded since."""
    if not engine.model_loaded or engine.load_model() is not runtime:
        return _STOPPED
    return next(rounds)
