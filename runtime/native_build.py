"""The native layers (``native/llama_step.cpp``) built once per machine, never hanging a start.
Our own compiler command (cpp_extension's ninja lock outlives a killed build), under a flock that
dies with its holder, renamed into place, stopped at a time limit, failures kept."""
from __future__ import annotations

import argparse
import hashlib
import importlib.util
import logging
import math
import os
import platform
import shlex
import signal
import subprocess
import sys
import sysconfig
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import torch

from inkling.runtime import build_lock
from inkling.runtime.user_cache import cache_folder

log = logging.getLogger(__name__)

EXTENSION = "inkling_llama_step"
SOURCE = Path(__file__).with_name("native") / "llama_step.cpp"
CACHE_ENV = "INKLING_NATIVE_CACHE"             # the cache root (tests: a tmp folder)
LIMIT_ENV = "INKLING_NATIVE_BUILD_TIMEOUT"      # the compile's time limit, seconds
TIME_LIMIT_S = 600.0                           # far past a normal compile
WAIT_GRACE_S = 30.0                            # past a live builder's own limit, then give up
X86_FEATURES = ("avx2", "fma", "f16c")         # portable: docs/decisions/forward-choice.md

Progress = Callable[[str], None]               # a line saying where the build is


class BuildFailed(RuntimeError):
    """The native module could not be built or loaded here; the message names why."""


@dataclass(frozen=True)
class Plan:
    """One build: the compiler command (less its output), its CPU flags, folder and time limit."""
    command: tuple[str, ...]
    flags: tuple[str, ...]
    folder: Path
    limit_s: float

    @property
    def module(self) -> Path:
        return self.folder / f"{EXTENSION}.so"

    @property
    def lock(self) -> Path:
        return self.folder / "build.lock"

    @property
    def failed(self) -> Path:
        return self.folder / "failed.txt"

    @property
    def log(self) -> Path:
        return self.folder / "build.log"


def plan(source: Path = SOURCE, flags: tuple[str, ...] | None = None) -> Plan:
    """The build of ``source`` here ($CXX, else c++; the CPU's own flags unless ``flags``)."""
    flags = cpu_flags(cpu_features()) if flags is None else tuple(flags)
    command = (*shlex.split(os.environ.get("CXX") or "c++"), *_compile_args(source, flags))
    # keyed by the source's bytes and the command, not by where the source lies: every
    # checkout and install of the same code shares one build
    keyed = [arg.replace(str(source), source.name) for arg in command]
    digest = hashlib.sha256(source.read_bytes() + "\0".join(keyed).encode()).hexdigest()
    name = "-".join([f"torch{torch.__version__}", sys.implementation.cache_tag,
                     _flags_name(flags), digest[:16]])
    return Plan(command, flags, cache_root() / name, time_limit())


def cache_root() -> Path:
    """Where built modules live: $INKLING_NATIVE_CACHE, else the user's cache folder."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]).expanduser()
    return cache_folder("native")


def time_limit() -> float:
    """The compile's time limit in seconds: $INKLING_NATIVE_BUILD_TIMEOUT, else 600."""
    text = os.environ.get(LIMIT_ENV, "").strip()
    try:
        value = float(text) if text else TIME_LIMIT_S
    except ValueError:
        raise BuildFailed(f"{LIMIT_ENV} must be a number of seconds, got {text!r}") from None
    if value <= 0:
        raise BuildFailed(f"{LIMIT_ENV} must be positive, got {text!r}")
    return value


def cpu_features() -> set[str]:
    """The CPU's instruction-set features, lower case (/proc/cpuinfo, or macOS's sysctl)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                return set(line.partition(":")[2].split())
    except OSError:
        pass
    if platform.system() == "Darwin":
        out = subprocess.run(["sysctl", "-n", "machdep.cpu.features",
                              "machdep.cpu.leaf7_features"], capture_output=True, text=True)
        return {f.lower().replace(".", "_") for f in out.stdout.split()}
    return set()


def cpu_flags(features: set[str]) -> tuple[str, ...]:
    """-mavx2 -mfma -mf16c (the kernel's vectors, float16 panels) where the CPU has all three."""
    if all(f in features for f in X86_FEATURES):
        return tuple(f"-m{f}" for f in X86_FEATURES)
    return ()


def _flags_name(flags: tuple[str, ...]) -> str:
    """The flags in a folder's name: the first, as 'avx2' or 'march=native'."""
    return "".join(f.removeprefix("-m") for f in flags[:1]) or "default"


def _compile_args(source: Path, flags: tuple[str, ...]) -> list[str]:
    """Torch's compile and link arguments for a CPU extension of ``source``, in one command."""
    root = Path(torch.__file__).parent
    abi = int(getattr(torch._C, "_GLIBCXX_USE_CXX11_ABI", True))
    return [f"-DTORCH_EXTENSION_NAME={EXTENSION}", "-DTORCH_API_INCLUDE_EXTENSION_H",
            f"-D_GLIBCXX_USE_CXX11_ABI={abi}",
            "-isystem", str(root / "include"),
            "-isystem", str(root / "include" / "torch" / "csrc" / "api" / "include"),
            "-isystem", sysconfig.get_paths()["include"],
            "-fPIC", "-std=c++20", "-O3", "-fno-trapping-math", *parallel_flags(), *flags,
            str(source),
            "-shared", f"-L{root / 'lib'}", "-lc10", "-ltorch_cpu", "-ltorch",
            "-ltorch_python"]


def parallel_flags() -> tuple[str, ...]:
    """``-fopenmp`` where torch's threads are OpenMP's (Linux).
    Without it ``at::parallel_for``, compiled into this module, runs on the calling thread only."""
    if sys.platform.startswith("linux") and torch.backends.openmp.is_available():
        return ("-fopenmp",)
    return ()


def failure(p: Plan) -> str | None:
    """Why the last build of ``p`` failed, or None (built, or never failed)."""
    try:
        return p.failed.read_text().strip() or None
    except OSError:
        return None


def build(p: Plan, progress: Progress | None = None) -> Path:
    """The module of ``p``, compiled under its lock if unbuilt; BuildFailed (kept in failed.txt)."""
    if p.module.is_file():
        return p.module
    fd = _wait_for_lock(p, progress)
    try:
        if not p.module.is_file():                 # (built by the one waited for)
            _compile(p, progress)
        p.failed.unlink(missing_ok=True)
        return p.module
    except BuildFailed as exc:
        p.failed.write_text(f"{exc}\n")
        raise
    finally:
        build_lock.release(fd)


def _wait_for_lock(p: Plan, progress: Progress | None) -> int:
    """The lock of ``p`` once no live builder holds it; BuildFailed past limit + WAIT_GRACE_S."""
    def waiting(who: dict, waited: float) -> None:
        if progress:
            progress(f"waiting for the native build of {build_lock.describe(who)}: "
                     f"{waited:.0f} s")
    limit = p.limit_s + WAIT_GRACE_S
    fd = build_lock.wait_take(p.lock, limit, "the native build", waiting)
    if fd is None:
        who = build_lock.holder(p.lock) or {}
        raise BuildFailed(f"another native build ({build_lock.describe(who)}) held "
                          f"its lock {p.lock} for more than {limit:.0f} s")
    return fd


def _compile(p: Plan, progress: Progress | None) -> None:
    """Compile into a temporary name, renamed into place; output in ``build.log``; BuildFailed."""
    _clear_leftovers(p)
    tmp = p.folder / f".{EXTENSION}.{os.getpid()}.tmp.so"
    out = p.folder / f".build.{os.getpid()}.log"
    script = f'ulimit -t {math.ceil(p.limit_s)}; exec "$@"'    # outlives a killed builder
    with open(out, "wb") as sink:
        proc = subprocess.Popen(["/bin/sh", "-c", script, "sh", *p.command, "-o", str(tmp)],
                                stdin=subprocess.DEVNULL, stdout=sink, stderr=subprocess.STDOUT,
                                start_new_session=True)        # its group killed at the limit
    code = None
    try:
        code = _wait(proc, p, progress)
        if code == 0 and tmp.is_file():
            os.replace(tmp, p.module)
    finally:
        _stop(proc)
        os.replace(out, p.log)
        tmp.unlink(missing_ok=True)
    if code is None:
        raise BuildFailed(f"the compiler ran past the time limit of {p.limit_s:.0f} s "
                          f"({LIMIT_ENV} sets it; its output: {p.log})")
    if not p.module.is_file():
        raise BuildFailed(f"{Path(p.command[0]).name} failed (exit status {code}): "
                          f"{_first_error(p.log)} (its output: {p.log})")


def _wait(proc: subprocess.Popen, p: Plan, progress: Progress | None) -> int | None:
    """The compiler's exit status, or None past the time limit."""
    start = time.monotonic()
    while True:
        try:
            return proc.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            pass
        elapsed = time.monotonic() - start
        if elapsed > p.limit_s:
            return None
        if progress:
            progress(f"compiling the native layers ({' '.join(p.flags) or 'default flags'}): "
                     f"{elapsed:.0f} s")


def _stop(proc: subprocess.Popen) -> None:
    """Kill the compiler's process group where it still runs (the time limit, a Ctrl-C)."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()


def _clear_leftovers(p: Plan) -> None:
    """Temporaries of builds that were killed (only the lock's holder calls this)."""
    for leftover in [*p.folder.glob(f".{EXTENSION}.*.tmp.so"), *p.folder.glob(".build.*.log")]:
        leftover.unlink(missing_ok=True)


def _first_error(log_path: Path) -> str:
    """The compiler's first error line (else its last line) in ``log_path``."""
    lines = [line.strip() for line in log_path.read_text(errors="replace").splitlines()
             if line.strip()]
    error = next((line for line in lines if "error" in line.lower()), None)
    return (error or (lines[-1] if lines else "no output"))[:300]


def start_background(p: Plan, source: Path = SOURCE) -> str:
    """Start a builder in its own session (a Ctrl-C spares it) unless one runs; says which."""
    who = build_lock.holder(p.lock)
    if who is not None:
        return f"a build is running ({build_lock.describe(who)})"
    with open(p.folder / "builder.log", "ab") as sink:
        proc = subprocess.Popen([sys.executable, "-m", "inkling.runtime.native_build",
                                 "--source", str(source)], stdin=subprocess.DEVNULL,
                                stdout=sink, stderr=subprocess.STDOUT, start_new_session=True)
    _STARTED.append(proc)
    return f"a build started in the background (pid {proc.pid})"


_STARTED: list[subprocess.Popen] = []   # the builders this process started (reaped at exit)


def load_module(path: Path):
    """Import the compiled module at ``path`` (it links to torch, imported first)."""
    spec = importlib.util.spec_from_file_location(EXTENSION, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(argv: list[str] | None = None) -> int:
    """The background builder: build or find the module, print where or why not; exit 0 or 1."""
    parser = argparse.ArgumentParser(prog="python -m inkling.runtime.native_build")
    parser.add_argument("--source", default=str(SOURCE), help="the C++ source to build")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    try:
        print(build(plan(Path(args.source))), flush=True)
    except BuildFailed as exc:
        print(f"the native build failed: {exc}", file=sys.stderr, flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
