"""`inkling replay --ray`: traces as tasks on a pool of Ray actors.

Each actor loads the model once and replays a trace exactly as in process, so its metrics are the
in-process ones; results merge into a local replay's report. Faults are ray_pool's."""
from __future__ import annotations

import json
import os
import socket

import torch

from inkling.completion.engine import Engine
from inkling.completion.options import InklingOptions
from inkling.models import resolve_model_path

from inkling.evaluation.ray_pool import (INSTALL_HINT, RayOptions, RayRun, import_ray, ray_session,
                                        run_tasks, ship_model, unpack_model)
from inkling.evaluation.replay import Replayer
from inkling.evaluation.replay_result import ReplayFailure, TraceResult, runtime_config
from inkling.evaluation.syntax_check import SyntaxChecker

__all__ = ["INSTALL_HINT", "RayOptions", "RayRun", "ReplayWorker", "import_ray",
           "replay_on_ray"]


class ReplayWorker:
    """A Ray actor's body: each model loaded once, one Replayer per set of options."""

    def __init__(self, model_blob: dict | None):
        torch.set_num_threads(max(1, int(os.environ.get("OMP_NUM_THREADS", "1"))))
        self._tmp, self._model_dir = unpack_model(model_blob)   # shipped: written here
        self._runtimes: dict = {}
        self._datastores: dict = {}
        self._replayers: dict = {}

    def _replayer(self, options_dict: dict):
        key = json.dumps(options_dict, sort_keys=True)
        if key in self._replayers:
            return self._replayers[key]
        if self._model_dir is not None:
            options_dict = {**options_dict, "model": {**options_dict["model"],
                                                      "path": self._model_dir}}
        options = InklingOptions().merged(options_dict)
        m = options.model
        if (m.path, m.device, m.dtype) not in self._runtimes:
            self._runtimes[(m.path, m.device, m.dtype)] = Engine(options).load_model()
        runtime = self._runtimes[(m.path, m.device, m.dtype)]
        engine = Engine(options, runtime)
        spec = options.completion.datastore
        if engine.uses_datastore and spec not in self._datastores:
            self._datastores[spec] = engine.build_datastore()
        replayer = self._replayers[key] = Replayer(
            options, runtime, SyntaxChecker(),
            self._datastores.get(spec) if engine.uses_datastore else None)
        return replayer

    def where(self) -> dict:
        """This actor's node, host and process, and the runtime it loaded."""
        ray = import_ray()                          # optional (.[ray]); there on an actor
        runtime = next(iter(self._runtimes.values()), None)
        return {"node": ray.get_runtime_context().get_node_id(), "host": socket.gethostname(),
                "pid": os.getpid(),
                "runtime": runtime_config(runtime) if runtime is not None else None}

    def replay(self, trace, options_dict: dict):
        return self._replayer(options_dict).replay(trace)


def replay_on_ray(options, traces: list, ray_options: RayOptions, progress_file=None,
                  on_submit=None) -> RayRun:
    """Replay ``traces`` on Ray actors under ``options`` (or a list: one task per trace and
    option set); ``RayRun.results`` in trace order (one list per option set for a list)."""
    several = isinstance(options, (list, tuple))
    option_sets = list(options) if several else [options]
    with ray_session(ray_options) as ray:
        blob, dicts = ship_model(ray, option_sets, ray_options)
        # a task is a whole trace under one option set (locally they interleave by event)
        tasks = [(t, c) for t in range(len(traces)) for c in range(len(dicts))]
        run = run_tasks(ray, ReplayWorker, (blob,), [(traces[t], dicts[c]) for t, c in tasks],
                        "replay", ray_options, "replaying on Ray",
                        "trace" if len(dicts) == 1 else "task", progress_file, on_submit,
                        lambda i, attempts, exc: _lost(traces[tasks[i][0]], attempts, exc))
    runtime = run.runtime
    if runtime is not None and blob is not None:       # the driver's path, not the copy's
        runtime["model"] = str(resolve_model_path(option_sets[0].model.path))
    per_set = [[run.results[i] for i, (_, c) in enumerate(tasks) if c == k]
               for k in range(len(dicts))]
    return RayRun(per_set if several else per_set[0], run.config, run.interrupted, runtime)


def _lost(trace, attempts: int, exc: Exception):
    """The result of a trace whose actor died on every attempt."""
    first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return TraceResult(trace.source, trace.header.name, failures=[ReplayFailure(
        trace.source, None, f"its Ray actor died on each of {attempts} attempts "
        f"({first_line[:200]})")])
