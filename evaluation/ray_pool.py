"""Sharding over Ray: a pool of actors of one kind, each handed the next task when idle.

A dead actor is replaced and its task rerun at most ``retries`` times (then ``lost`` builds its
result); Ctrl-C cancels the running tasks, kills the actors and returns what finished. Ray is an
optional extra."""
from __future__ import annotations

import contextlib
import dataclasses
import logging
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from tqdm import tqdm

from inkling.completion.errors import InklingError
from inkling.models import resolve_model_path

INSTALL_HINT = "--ray needs Ray: pip install -e '.[ray]' (or pip install 'ray[default]>=2.40')"


def import_ray():
    """The ``ray`` module, or an InklingError saying how to install it."""
    try:
        # lazy: optional and slow to import, and cli/flags.py imports this module for every command
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
    """Results in task order (None: not run, after Ctrl-C), the report's config and runtime."""
    results: list
    config: dict = field(default_factory=dict)
    interrupted: bool = False
    runtime: dict | None = None


@contextlib.contextmanager
def ray_session(options: RayOptions):
    """Ray connected for the block: a local instance started here, or ``options.address``."""
    ray = import_ray()
    started_here = not ray.is_initialized()
    if started_here:
        # silence the token-authentication notice a new local instance prints on every run
        logging.getLogger("ray._private.authentication.authentication_token_setup") \
            .setLevel(logging.ERROR)
        ray.init(address=options.address, include_dashboard=False, log_to_driver=False,
                 logging_level="ERROR", configure_logging=False)
    try:
        yield ray
    finally:
        if started_here:
            ray.shutdown()


def model_files(path: Path) -> dict:
    """A model (a folder, or a GGUF file) whole, to ship through Ray's object store:
    ``files`` (name -> bytes) and ``file`` (the GGUF file's name; None for a folder)."""
    if path.is_file():
        return {"files": {path.name: path.read_bytes()}, "file": path.name}
    return {"files": {p.name: p.read_bytes() for p in sorted(path.iterdir()) if p.is_file()},
            "file": None}


def unpack_model(blob: dict | None):
    """(temporary folder holding a shipped model, the model's path there), or (None, None);
    keep the first."""
    if blob is None:
        return None, None
    tmp = tempfile.TemporaryDirectory(prefix="inkling-ray-model-")
    for name, data in blob["files"].items():
        (Path(tmp.name) / name).write_bytes(data)
    return tmp, str(Path(tmp.name) / blob["file"]) if blob["file"] else tmp.name


def ship_model(ray, option_sets: list, options: RayOptions) -> tuple:
    """(ref of the model's files or None, each option set as a dict with the workers' path)."""
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


_NOWHERE = {"node": None, "host": None, "pid": None, "runtime": None}


class _Tasks:
    """One run's tasks: each payload to the next idle actor, rerun when its actor dies."""

    def __init__(self, ray, pool: _Pool, payloads: list, method: str, retries: int,
                 on_submit: Callable | None, lost: Callable):
        self.ray, self.pool, self.payloads, self.method = ray, pool, payloads, method
        self.retries, self.on_submit, self.lost = retries, on_submit, lost
        self.results: list = [None] * len(payloads)
        self.pending = list(range(len(payloads)))[::-1]    # popped from the end: task order
        self.attempts = [0] * len(payloads)
        self.running: dict = {}                             # future -> (index, actor)
        self.where: dict = {}                               # actor -> its where()
        self.reruns = 0

    def run(self, bar) -> None:
        """Until every task has a result; ``bar`` ticks once a task."""
        while self.pending or self.running:
            self._submit()
            if self._collect():
                bar.update()

    def _submit(self) -> None:
        while self.pending and self.pool.idle:
            index, actor = self.pending.pop(), self.pool.idle.pop()
            self.attempts[index] += 1
            future = getattr(actor, self.method).remote(*self.payloads[index])
            self.running[future] = (index, actor)
            if self.on_submit is not None:
                self.on_submit(actor, index)

    def _collect(self) -> bool:
        """Wait for the next task to end; whether it has its result (False: it runs again)."""
        done, _ = self.ray.wait(list(self.running), num_returns=1)
        index, actor = self.running.pop(done[0])
        errors = self.ray.exceptions
        try:
            self.results[index] = self.ray.get(done[0])
        except (errors.RayActorError, errors.WorkerCrashedError) as exc:
            self.pool.replace(actor)
            if self.attempts[index] > self.retries:
                self.results[index] = self.lost(index, self.attempts[index], exc)
                return True
            self.reruns += 1
            self.pending.append(index)
            return False
        self.pool.idle.append(actor)
        if actor not in self.where:
            self.where[actor] = self._where(actor)
        return True

    def _where(self, actor) -> dict:
        errors = self.ray.exceptions
        try:
            return self.ray.get(actor.where.remote(), timeout=30)
        except (errors.GetTimeoutError, errors.RayActorError):
            return dict(_NOWHERE)

    def cancel(self) -> None:
        """Ctrl-C: the running tasks cancelled, every actor killed."""
        for future in self.running:
            self.ray.cancel(future, force=True)
        self.pool.kill_all(actor for _, actor in self.running.values())
        self.running.clear()


def run_tasks(ray, worker_cls, worker_args: tuple, payloads: list, method: str,
              options: RayOptions, desc: str, unit: str, progress_file,
              on_submit: Callable | None, lost: Callable) -> RayRun:
    """Run ``worker.<method>(*payload)`` per payload on actors of ``worker_cls`` (which has
    ``where()``); ``on_submit(actor, index)`` runs at each hand-out, ``lost(index, attempts,
    exc)`` is the result of a task whose actor died every time."""
    gpus = _gpus(ray, options.gpus_per_actor)
    actor_cls = ray.remote(num_cpus=options.cpus_per_actor, num_gpus=gpus, max_restarts=0,
                           max_task_retries=0)(worker_cls)
    pool = _Pool(ray, actor_cls, worker_args, max(1, min(options.actors, len(payloads) or 1)))
    tasks = _Tasks(ray, pool, payloads, method, options.retries, on_submit, lost)
    interrupted = False
    bar = tqdm(total=len(payloads), desc=desc, unit=unit, file=progress_file, disable=None)
    try:
        tasks.run(bar)
    except KeyboardInterrupt:
        interrupted = True
        tasks.cancel()
    finally:
        bar.close()
        if not interrupted:
            pool.kill_all(())
    workers, runtime = _workers(tasks.where)
    config = {"address": options.address or "local", "actors": options.actors,
              "cpus_per_actor": options.cpus_per_actor, "gpus_per_actor": gpus,
              "model_shipped": options.model_path is None, "retries": options.retries,
              "actors_started": pool.started, "reruns": tasks.reruns, "workers": workers}
    return RayRun(tasks.results, config, interrupted, runtime)


def _workers(where: dict) -> tuple[list[dict], dict | None]:
    """(each actor's node/host/pid sorted, the first runtime block found)."""
    workers = sorted(where.values(), key=lambda w: (str(w["host"]), str(w["pid"])))
    runtime = next((w["runtime"] for w in workers if w.get("runtime")), None)
    for w in workers:
        w.pop("runtime", None)
    return workers, runtime
