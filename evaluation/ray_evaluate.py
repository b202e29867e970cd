"""`inkling evaluate --ray`: the next-line evaluation sharded over Ray actors, one task
per held-out file and prompt order (a file's lines stay together, in order, on one
Engine, as in process), merged back into the same figures."""
from __future__ import annotations

import os
import socket

import torch

from inkling.completion.engine import Engine
from inkling.completion.errors import InklingError
from inkling.completion.options import InklingOptions
from inkling.models import resolve_model_path

from inkling.evaluation.held_out import (FileScore, NextLineResult, evaluate_file,
                                         evaluation_options, held_out_files, merge_scores)
from inkling.evaluation.ray_pool import (RayOptions, RayRun, import_ray, ray_session, run_tasks,
                                        ship_model, unpack_model)
from inkling.evaluation.replay_result import runtime_config


class EvaluateWorker:
    """The body of a Ray actor: the model loaded once, one Engine per prompt order."""

    def __init__(self, model_blob: dict | None):
        torch.set_num_threads(max(1, int(os.environ.get("OMP_NUM_THREADS", "1"))))
        self._tmp, self._model_dir = unpack_model(model_blob)   # shipped: written here
        self._engines: dict = {}
        self._files: dict = {}

    def _engine(self, options_dict: dict):
        order = options_dict["completion"]["fim_order"]
        if order not in self._engines:
            if self._model_dir is not None:
                options_dict = {**options_dict, "model": {**options_dict["model"],
                                                          "path": self._model_dir}}
            shared = next(iter(self._engines.values()), None)
            self._engines[order] = Engine(InklingOptions().merged(options_dict),
                                          shared.load_model() if shared else None)
        return self._engines[order]

    def where(self) -> dict:
        ray = import_ray()                          # optional (.[ray]); there on an actor
        engine = next(iter(self._engines.values()), None)
        return {"node": ray.get_runtime_context().get_node_id(), "host": socket.gethostname(),
                "pid": os.getpid(),
                "runtime": runtime_config(engine.load_model()) if engine else None}

    def score(self, options_dict: dict, held_out: str, relpath: str, lines_per_file: int,
              seed: int, drafts: int = 1) -> tuple[str, FileScore]:
        if held_out not in self._files:
            self._files[held_out] = {f.relpath: f for f in held_out_files(held_out)}
        engine = self._engine(options_dict)
        order = options_dict["completion"]["fim_order"]
        return (order if order != "auto" else engine.load_model().fim_order), evaluate_file(
            engine, self._files[held_out][relpath], lines_per_file, seed, drafts)


def evaluate_on_ray(model: str, base, jobs: list[tuple[str, str]], lines_per_file: int,
                    seed: int, ray_options: RayOptions, progress_file=None, drafts: int = 1
                    ) -> tuple[list[NextLineResult], RayRun]:
    """The results of ``jobs`` ((held-out set, prompt order) pairs) as ``evaluate_next_line``
    gives them, one task per file; a file lost on every attempt is an error naming it."""
    tasks = [(j, held_out, f.relpath) for j, (held_out, _) in enumerate(jobs)
             for f in held_out_files(held_out)]
    with ray_session(ray_options) as ray:
        blob, dicts = ship_model(ray, [evaluation_options(model, order, base)
                                       for _, order in jobs], ray_options)
        payloads = [(dicts[j], held_out, relpath, lines_per_file, seed, drafts)
                    for j, held_out, relpath in tasks]
        run = run_tasks(ray, EvaluateWorker, (blob,), payloads, "score", ray_options,
                        "evaluating on Ray", "file", progress_file, None,
                        lambda i, attempts, exc: InklingError(
                            f"{tasks[i][2]} ({tasks[i][1]}): its Ray actor died on each of "
                            f"{attempts} attempts"))
    if run.interrupted:
        raise KeyboardInterrupt
    for r in run.results:
        if isinstance(r, InklingError):
            raise r
    if run.runtime is not None and blob is not None:
        run.runtime["model"] = str(resolve_model_path(model))
    results = []
    for j, (held_out, order) in enumerate(jobs):
        scored = [run.results[i] for i, t in enumerate(tasks) if t[0] == j]
        resolved = scored[0][0] if scored else order
        results.append(merge_scores(resolved, held_out, [s for _, s in scored], drafts))
    return results, run
