"""Loading the model and preparing drafting as jobs on the model worker, with progress and
status; a failure is shown once and the server keeps serving."""
from __future__ import annotations

import gc

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


async def prepare_drafting(ls: InklingServer) -> None:
    """Build what completions search besides the document (``Engine.prepare``); a step that
    fails is shown once and the others still run."""
    progress = WorkDoneProgress(ls, "prepare", "indexing")
    await progress.begin("inkling: indexing")
    try:
        report = await ls.worker.run(ls.engine.prepare, progress.report)
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
