"""Sharding over Ray: a pool of actors of one kind, each handed the next task when idle.

Ray places the actors and moves the data; this module only hands out tasks and handles
an actor's death: the dead actor is killed for good, a new one takes its place, and its
task is run again, at most ``retries`` times (then ``lost`` builds the task's result, so
the other tasks still report). Ctrl-C cancels the running tasks, kills the actors and
returns what finished. Used by `inkling replay --ray` (evaluation/ray_replay.py) and
`inkling evaluate --ray` (evaluation/ray_evaluate.py).

Ray is optional (``pip install -e '.[ray]'``); without it ``--ray`` says how to get it.
"""
from __future__ import annotations

import contextlib
import dataclasses
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from inkling.completion.errors import InklingError
from inkling.models import resolve_model_path

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
    retries: int = 2                  # re-runs of a task whose actor died


@dataclass
class RayRun:
    """What a sharded run returns: results in task order (None where a task was not run,
    after Ctrl-C), the config block for the report, whether it was interrupted, and the
    runtime block (as a local run's report has it)."""
    results: list
    config: dict = field(default_factory=dict)
    interrupted: bool = False
    runtime: dict | None = None


@contextlib.contextmanager
def ray_session(options: RayOptions):
    """Ray, connected for the block: a local instance (started and stopped here) or the
    cluster at ``options.address``; an instance already initialised is used as it is."""
    ray = import_ray()
    started_here = not ray.is_initialized()
    if started_here:
        # Ray picks token authentication for a new local instance and prints a notice
        # saying so on every run; the choice stands, the notice is not shown
        logging.getLogger("ray._private.authentication.authentication_token_setup") \
            .setLevel(logging.ERROR)
        ray.init(address=options.address, include_dashboard=False, log_to_driver=False,
                 logging_level="ERROR", configure_logging=False)
    try:
        yield ray
    finally:
        if started_here:
            ray.shutdown()


def model_files(folder: Path) -> dict[str, bytes]:
    """A model folder's files, to ship through Ray's object store (the bundled model is
    about 15 MB)."""
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


def unpack_model(blob: dict[str, bytes] | None):
    """(a temporary folder holding a shipped model's files, its path), or (None, None)
    when nothing was shipped; the folder lives as long as the first item is kept."""
    if blob is None:
        return None, None
    import tempfile
    tmp = tempfile.TemporaryDirectory(prefix="inkling-ray-model-")
    for name, data in blob.items():
        (Path(tmp.name) / name).write_bytes(data)
    return tmp, tmp.name


def ship_model(ray, option_sets: list, options: RayOptions) -> tuple:
    """(object ref of the model folder's files, or None when the workers read
    ``options.model_path``; each option set as a dict, the model path as workers see it)."""
    blob = None
    if options.model_path is None:
        if len({o.model.path for o in option_sets}) > 1:
            raise InklingError("--ray ships one model to the workers; the options name "
                               "several (give --ray-model-path, or compare on one model)")
        blob = ray.put(model_files(resolve_model_path(option_sets[0].model.path)))
    dicts = []
    for o in option_sets:
        d = dataclasses.asdict(o)
        if options.model_path is not None:
            d["model"]["path"] = options.model_path
        dicts.append(d)
    return blob, dicts


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


def run_tasks(ray, worker_cls, worker_args: tuple, payloads: list, method: str,
              options: RayOptions, desc: str, unit: str, progress_file,
              on_submit: Callable | None, lost: Callable) -> RayRun:
    """Run ``worker.<method>(*payload)`` for each payload on a pool of actors of
    ``worker_cls`` (a plain class with a ``where()`` method: node, host, pid, runtime).
    ``on_submit(actor, index)`` is called as each task is handed out (tests kill an actor
    there); ``lost(index, attempts, exc)`` is the result of a task whose actor died on
    every attempt."""
    from ray.exceptions import GetTimeoutError, RayActorError, WorkerCrashedError
    from tqdm import tqdm
    gpus = _gpus(ray, options.gpus_per_actor)
    actor_cls = ray.remote(num_cpus=options.cpus_per_actor, num_gpus=gpus, max_restarts=0,
                           max_task_retries=0)(worker_cls)
    pool = _Pool(ray, actor_cls, worker_args, max(1, min(options.actors, len(payloads) or 1)))
    results: list = [None] * len(payloads)
    pending = list(range(len(payloads)))[::-1]         # popped from the end: task order
    attempts = [0] * len(payloads)
    running: dict = {}                                  # future -> (index, actor)
    where: dict = {}
    reruns, interrupted = 0, False
    bar = tqdm(total=len(payloads), desc=desc, unit=unit, file=progress_file, disable=None)
    try:
        while pending or running:
            while pending and pool.idle:
                index, actor = pending.pop(), pool.idle.pop()
                attempts[index] += 1
                running[getattr(actor, method).remote(*payloads[index])] = (index, actor)
                if on_submit is not None:
                    on_submit(actor, index)
            done, _ = ray.wait(list(running), num_returns=1)
            index, actor = running.pop(done[0])
            try:
                results[index] = ray.get(done[0])
            except (RayActorError, WorkerCrashedError) as exc:
                pool.replace(actor)
                if attempts[index] > options.retries:
                    results[index] = lost(index, attempts[index], exc)
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
    workers = sorted(where.values(), key=lambda w: (str(w["host"]), str(w["pid"])))
    runtime = next((w["runtime"] for w in workers if w.get("runtime")), None)
    for w in workers:
        w.pop("runtime", None)
    config = {"address": options.address or "local", "actors": options.actors,
              "cpus_per_actor": options.cpus_per_actor, "gpus_per_actor": gpus,
              "model_shipped": options.model_path is None, "retries": options.retries,
              "actors_started": pool.started, "reruns": reruns, "workers": workers}
    return RayRun(results, config, interrupted, runtime)
