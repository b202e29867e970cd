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
    """The body of a Ray actor: one loaded model, one Replayer, many traces."""

    def __init__(self, options_dict: dict, model_blob: dict[str, bytes] | None):
        import torch

        from inkling.completion.engine import Engine
        from inkling.completion.options import InklingOptions

        from .replay import Replayer
        from .syntax_check import SyntaxChecker
        torch.set_num_threads(max(1, int(os.environ.get("OMP_NUM_THREADS", "1"))))
        self._tmp = None
        if model_blob is not None:                      # shipped: written next to the worker
            self._tmp = tempfile.TemporaryDirectory(prefix="inkling-ray-model-")
            for name, data in model_blob.items():
                (Path(self._tmp.name) / name).write_bytes(data)
            options_dict = {**options_dict, "model": {**options_dict["model"],
                                                      "path": self._tmp.name}}
        options = InklingOptions().merged(options_dict)
        engine = Engine(options)
        runtime = engine.load_model()
        datastore = engine.build_datastore() if engine.uses_datastore else None
        self.replayer = Replayer(options, runtime, SyntaxChecker(), datastore)

    def where(self) -> dict:
        """This actor's node, host and process, and the runtime it loaded."""
        import ray
        from .replay_cli import runtime_config
        return {"node": ray.get_runtime_context().get_node_id(), "host": socket.gethostname(),
                "pid": os.getpid(), "runtime": runtime_config(self.replayer.runtime)}

    def replay(self, trace):
        return self.replayer.replay(trace)


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
    """Replay ``traces`` (parsed) on Ray actors. ``on_submit(actor, index)`` is called as
    each trace is handed to an actor (tests kill an actor there)."""
    import dataclasses

    from tqdm import tqdm
    ray = import_ray()
    from ray.exceptions import GetTimeoutError, RayActorError, WorkerCrashedError

    from inkling.completion.engine import resolve_model_path
    started_here = not ray.is_initialized()
    if started_here:
        ray.init(address=ray_options.address, include_dashboard=False, log_to_driver=False,
                 logging_level="ERROR", configure_logging=False)
    options_dict = dataclasses.asdict(options)
    blob = None
    if ray_options.model_path is None:
        blob = ray.put(model_files(resolve_model_path(options.model.path)))
    else:
        options_dict["model"]["path"] = ray_options.model_path
    gpus = _gpus(ray, ray_options.gpus_per_actor)
    actor_cls = ray.remote(num_cpus=ray_options.cpus_per_actor, num_gpus=gpus, max_restarts=0,
                           max_task_retries=0)(ReplayWorker)
    pool = _Pool(ray, actor_cls, (options_dict, blob), max(1, min(ray_options.actors,
                                                                  len(traces) or 1)))
    results: list = [None] * len(traces)
    pending = list(range(len(traces)))[::-1]           # popped from the end: trace order
    attempts = [0] * len(traces)
    running: dict = {}                                  # future -> (index, actor)
    where: dict = {}
    reruns, interrupted = 0, False
    bar = tqdm(total=len(traces), desc="replaying on Ray", unit="trace", file=progress_file,
               disable=None)
    try:
        while pending or running:
            while pending and pool.idle:
                index, actor = pending.pop(), pool.idle.pop()
                attempts[index] += 1
                running[actor.replay.remote(traces[index])] = (index, actor)
                if on_submit is not None:
                    on_submit(actor, index)
            done, _ = ray.wait(list(running), num_returns=1)
            index, actor = running.pop(done[0])
            try:
                results[index] = ray.get(done[0])
            except (RayActorError, WorkerCrashedError) as exc:
                pool.replace(actor)
                if attempts[index] > ray_options.retries:
                    results[index] = _lost(traces[index], attempts[index], exc)
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
    runtime = next((w.pop("runtime") for w in workers if w.get("runtime")), None)
    for w in workers:
        w.pop("runtime", None)
    if runtime is not None and blob is not None:       # the driver's path, not the copy's
        runtime["model"] = str(resolve_model_path(options.model.path))
    config = {"address": ray_options.address or "local", "actors": ray_options.actors,
              "cpus_per_actor": ray_options.cpus_per_actor, "gpus_per_actor": gpus,
              "model_shipped": blob is not None, "retries": ray_options.retries,
              "actors_started": pool.started, "reruns": reruns,
              "workers": workers}
    return RayRun(results, config, interrupted, runtime)


def _lost(trace, attempts: int, exc: Exception):
    """The result of a trace whose actor died on every attempt."""
    from .replay_result import ReplayFailure, TraceResult
    first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return TraceResult(trace.source, trace.header.name, failures=[ReplayFailure(
        trace.source, None, f"its Ray actor died on each of {attempts} attempts "
        f"({first_line[:200]})")])
