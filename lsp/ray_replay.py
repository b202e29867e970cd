"""`inkling replay --ray`: traces as tasks on a pool of Ray actors.

Each actor loads the model once and keeps it (with the datastore) for every trace it
replays; a trace is replayed exactly as in process (a fresh Engine per trace over the
shared model), so its metrics are the in-process ones, timings aside. The driver hands
each idle actor the next trace (Ray places the actors and moves the data), merges the
per-trace results into the same report a local replay writes, and shows a progress bar
over traces.

Faults: an actor that dies mid-trace (its process killed, its node lost) is replaced by
a new actor and the trace is run again, at most ``retries`` times; a trace that fails by
itself (a failed check, a bad line) is recorded as it is locally and the others go on;
Ctrl-C cancels the cluster's tasks, kills the actors and returns what finished.

Ray is optional (``pip install -e '.[ray]'``); without it ``--ray`` says so.
"""
from __future__ import annotations

import os
import socket
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from inkling.completion.errors import InklingError

INSTALL_HINT = "--ray needs Ray: pip install -e '.[ray]' (or pip install 'ray[default]>=2.40')"


def import_ray():
    try:
        import ray
    except ImportError:
        raise InklingError(INSTALL_HINT) from None
    return ray


@dataclass
class RayOptions:
    address: str | None = None        # None: a local Ray instance on this machine
    actors: int = 2
    cpus_per_actor: float = 1.0
    gpus_per_actor: float | None = None   # None: 1 when the cluster has GPUs, else 0
    model_path: str | None = None     # the model folder as the workers see it (None: ship it)
    retries: int = 2                  # re-runs of a trace whose actor died


@dataclass
class RayRun:
    """What a sharded replay returns: results in trace order (None where a trace was not
    run, after Ctrl-C), the config block for the report, and whether it was interrupted."""
    results: list
    config: dict = field(default_factory=dict)
    interrupted: bool = False
    runtime: dict | None = None       # the runtime block of the report (as a local replay's)


def model_files(folder: Path) -> dict[str, bytes]:
    """A model folder's files, to ship through Ray's object store (the bundled model is
    about 15 MB)."""
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


class ReplayWorker:
    """The body of a Ray actor: models loaded once (per model setting), one Replayer per
    set of options, many traces."""

    def __init__(self, model_blob: dict[str, bytes] | None):
        import torch
        torch.set_num_threads(max(1, int(os.environ.get("OMP_NUM_THREADS", "1"))))
        self._model_dir = None
        if model_blob is not None:                      # shipped: written next to the worker
            self._tmp = tempfile.TemporaryDirectory(prefix="inkling-ray-model-")
            for name, data in model_blob.items():
                (Path(self._tmp.name) / name).write_bytes(data)
            self._model_dir = self._tmp.name
        self._runtimes: dict = {}
        self._datastores: dict = {}
        self._replayers: dict = {}

    def _replayer(self, options_dict: dict):
        import json

        from inkling.completion.engine import Engine
        from inkling.completion.options import InklingOptions

        from .replay import Replayer
        from .syntax_check import SyntaxChecker
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
        import ray

        from .replay_cli import runtime_config
        runtime = next(iter(self._runtimes.values()), None)
        return {"node": ray.get_runtime_context().get_node_id(), "host": socket.gethostname(),
                "pid": os.getpid(),
                "runtime": runtime_config(runtime) if runtime is not None else None}

    def replay(self, trace, options_dict: dict):
        return self._replayer(options_dict).replay(trace)


def _gpus(ray, wanted: float | None) -> float:
    if wanted is not None:
        return wanted
    return 1.0 if ray.cluster_resources().get("GPU", 0) >= 1 else 0.0


class _Pool:
    """Actors of one kind; a dead one is replaced by a new one."""

    def __init__(self, ray, actor_cls, args: tuple, count: int):
        self.ray, self.cls, self.args = ray, actor_cls, args
        self.idle = [self.cls.remote(*args) for _ in range(count)]
        self.started = len(self.idle)

    def replace(self, dead) -> None:
        self.ray.kill(dead, no_restart=True)
        self.idle.append(self.cls.remote(*self.args))
        self.started += 1

    def kill_all(self, busy) -> None:
        for actor in self.idle + list(busy):
            self.ray.kill(actor, no_restart=True)


def replay_on_ray(options, traces: list, ray_options: RayOptions, progress_file=None,
                  on_submit=None) -> RayRun:
    """Replay ``traces`` (parsed) on Ray actors under ``options`` (an InklingOptions, or a
    list of them: ``--compare``'s combinations, every trace x combination pair a task).
    ``RayRun.results`` is a list of results in trace order (a list of such lists for a
    list of options). ``on_submit(actor, index)`` is called as each task is handed to an
    actor, ``index`` counting tasks (tests kill an actor there)."""
    import dataclasses

    from tqdm import tqdm
    ray = import_ray()
    from ray.exceptions import GetTimeoutError, RayActorError, WorkerCrashedError

    from inkling.completion.engine import resolve_model_path
    started_here = not ray.is_initialized()
    if started_here:
        if ray_options.address is None:
            # a local instance keeps Ray's token authentication, asked for explicitly so
            # that Ray does not print a notice about choosing it
            os.environ.setdefault("RAY_AUTH_MODE", "token")
        ray.init(address=ray_options.address, include_dashboard=False, log_to_driver=False,
                 logging_level="ERROR", configure_logging=False)
    several = isinstance(options, (list, tuple))
    option_sets = list(options) if several else [options]
    paths = {o.model.path for o in option_sets}
    blob = None
    if ray_options.model_path is None:
        if len(paths) > 1:
            raise InklingError("--ray ships one model to the workers; the compared options "
                               "name several (give --ray-model-path, or compare on one model)")
        blob = ray.put(model_files(resolve_model_path(option_sets[0].model.path)))
    dicts = []
    for o in option_sets:
        d = dataclasses.asdict(o)
        if ray_options.model_path is not None:
            d["model"]["path"] = ray_options.model_path
        dicts.append(d)
    # tasks: trace by trace, each under every option set (interleaved as locally)
    tasks = [(t, c) for t in range(len(traces)) for c in range(len(dicts))]
    gpus = _gpus(ray, ray_options.gpus_per_actor)
    actor_cls = ray.remote(num_cpus=ray_options.cpus_per_actor, num_gpus=gpus, max_restarts=0,
                           max_task_retries=0)(ReplayWorker)
    pool = _Pool(ray, actor_cls, (blob,), max(1, min(ray_options.actors, len(tasks) or 1)))
    results: list = [None] * len(tasks)
    pending = list(range(len(tasks)))[::-1]            # popped from the end: trace order
    attempts = [0] * len(tasks)
    running: dict = {}                                  # future -> (index, actor)
    where: dict = {}
    reruns, interrupted = 0, False
    bar = tqdm(total=len(tasks), desc="replaying on Ray",
               unit="trace" if len(dicts) == 1 else "task", file=progress_file, disable=None)
    try:
        while pending or running:
            while pending and pool.idle:
                index, actor = pending.pop(), pool.idle.pop()
                attempts[index] += 1
                trace, combo = tasks[index]
                running[actor.replay.remote(traces[trace], dicts[combo])] = (index, actor)
                if on_submit is not None:
                    on_submit(actor, index)
            done, _ = ray.wait(list(running), num_returns=1)
            index, actor = running.pop(done[0])
            try:
                results[index] = ray.get(done[0])
            except (RayActorError, WorkerCrashedError) as exc:
                pool.replace(actor)
                if attempts[index] > ray_options.retries:
                    results[index] = _lost(traces[tasks[index][0]], attempts[index], exc)
                    bar.update()
                else:
                    reruns += 1
                    pending.append(index)
                continue
            pool.idle.append(actor)
            if actor not in where:
                try:
                    where[actor] = ray.get(actor.where.remote(), timeout=30)
                except (GetTimeoutError, RayActorError):
                    where[actor] = {"node": None, "host": None, "pid": None, "runtime": None}
            bar.update()
    except KeyboardInterrupt:
        interrupted = True
        for future in running:
            ray.cancel(future, force=True)
        pool.kill_all(actor for _, actor in running.values())
        running.clear()
    finally:
        bar.close()
        if not interrupted:
            pool.kill_all(())
        if started_here:
            ray.shutdown()
    workers = sorted(where.values(), key=lambda w: (str(w["host"]), str(w["pid"])))
    runtime = next((w["runtime"] for w in workers if w.get("runtime")), None)
    for w in workers:
        w.pop("runtime", None)
    if runtime is not None and blob is not None:       # the driver's path, not the copy's
        runtime["model"] = str(resolve_model_path(option_sets[0].model.path))
    config = {"address": ray_options.address or "local", "actors": ray_options.actors,
              "cpus_per_actor": ray_options.cpus_per_actor, "gpus_per_actor": gpus,
              "model_shipped": blob is not None, "retries": ray_options.retries,
              "actors_started": pool.started, "reruns": reruns,
              "workers": workers}
    per_set = [[results[i] for i, (_, c) in enumerate(tasks) if c == k]
               for k in range(len(dicts))]
    return RayRun(per_set if several else per_set[0], config, interrupted, runtime)


def _lost(trace, attempts: int, exc: Exception):
    """The result of a trace whose actor died on every attempt."""
    from .replay_result import ReplayFailure, TraceResult
    first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return TraceResult(trace.source, trace.header.name, failures=[ReplayFailure(
        trace.source, None, f"its Ray actor died on each of {attempts} attempts "
        f"({first_line[:200]})")])
