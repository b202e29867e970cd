"""The native layers (``native/llama_step.cpp``) built once per machine, by a build that
cannot hang a start.

- **One compiler command of our own** (not torch's ``cpp_extension.load``, whose ninja
  build directory holds a ``lock`` file that a killed build leaves behind: every later
  load then waits on it forever). The command is torch's for a CPU extension (its headers,
  its libraries), with the CPU flags of :func:`cpu_flags`.
- **Where**: ``<cache root>/<key>/inkling_llama_step.so``; the cache root is
  ``$INKLING_NATIVE_CACHE``, else ``$XDG_CACHE_HOME/inkling/native`` or
  ``~/.cache/inkling/native``; the key names the torch version, the Python, the CPU flags
  and a hash of the source and the whole command, so that any change builds anew.
- **The lock**: ``build.lock`` in that folder (``native_lock.py``): the kernel's
  ``flock``, released however its process ends, so a lock whose process is gone is never
  waited on; the next builder takes it over.
- **No half-written module**: the compiler writes a temporary name in the folder, renamed
  into place when it succeeded (the rename is atomic: a module that exists is whole).
- **A time limit**: the compile is stopped after :func:`time_limit` seconds of wall
  time (its process group killed), and each of the compiler's processes is limited to as
  many CPU seconds (``ulimit -t``), so that a compile whose builder was killed ends too.
- **A failure is remembered** (``failed.txt``, its reason): ``model.forward auto`` then
  does not start the build again at every start; a build in the foreground
  (``inkling build-native``, ``model.forward native``) tries again.

``python -m inkling.runtime.native_build`` is the background builder that model.forward
auto starts (:func:`start_background`) when the module is not built: a separate process
in its own session, so that neither a Ctrl-C nor a killed server stops it half-way.
"""
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

from inkling.runtime import native_lock

log = logging.getLogger(__name__)

EXTENSION = "inkling_llama_step"
SOURCE = Path(__file__).with_name("native") / "llama_step.cpp"
CACHE_ENV = "INKLING_NATIVE_CACHE"             # the cache root (tests: a tmp folder)
LIMIT_ENV = "INKLING_NATIVE_BUILD_TIMEOUT"      # the compile's time limit, seconds
TIME_LIMIT_S = 600.0                           # 22 to 27 CPU s here (native_build.txt)
WAIT_GRACE_S = 30.0                            # past a live builder's own limit, then give up
# AVX2, FMA and F16C (nearly every x86-64 CPU since 2013): the kernel's vectors and its
# float16 panels. Not -march=native: its one-row step measured the same within noise
# (0.39 ms against 0.39 to 0.43 on an AVX-512 CPU, benchmarks/results/native_build.txt),
# and the build would depend on the compiler's model of the CPU it runs on
X86_FEATURES = ("avx2", "fma", "f16c")

Progress = Callable[[str], None]               # a line saying where the build is


class BuildFailed(RuntimeError):
    """The native module could not be built or loaded here; the message names why."""


@dataclass(frozen=True)
class Plan:
    """One build: the compiler command (less its output), the CPU flags in it, the
    folder of its module and lock, and its time limit (seconds)."""
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
    """The build of ``source`` on this machine: the one place its settings are read
    (the compiler from ``$CXX``, else ``c++``; the CPU flags, from the CPU's features
    unless given (benchmarks/native_flags.py compares some); the cache root; the time
    limit)."""
    flags = cpu_flags(cpu_features()) if flags is None else tuple(flags)
    command = (*shlex.split(os.environ.get("CXX") or "c++"), *_compile_args(source, flags))
    digest = hashlib.sha256(source.read_bytes() + "\0".join(command).encode()).hexdigest()
    name = "-".join([f"torch{torch.__version__}", sys.implementation.cache_tag,
                     _flags_name(flags), digest[:16]])
    return Plan(command, flags, cache_root() / name, time_limit())


def cache_root() -> Path:
    """Where built modules live: $INKLING_NATIVE_CACHE, else the user's cache folder."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "inkling" / "native"


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
    """The CPU's instruction-set features, lower case (Linux: /proc/cpuinfo's flags;
    macOS: sysctl's); empty where neither says."""
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
    """The compiler's CPU flags for ``features``: -mavx2 -mfma -mf16c where the CPU has
    all three, else none (the compiler's default target: plain loops, float32 panels)."""
    if all(f in features for f in X86_FEATURES):
        return tuple(f"-m{f}" for f in X86_FEATURES)
    return ()


def _flags_name(flags: tuple[str, ...]) -> str:
    """The flags in a folder's name: the first, as 'avx2' or 'march=native'."""
    return "".join(f.removeprefix("-m") for f in flags[:1]) or "default"


def _compile_args(source: Path, flags: tuple[str, ...]) -> list[str]:
    """Torch's compile and link arguments for a CPU extension of ``source`` (as
    ``cpp_extension.load`` gives them), in one command, and OpenMP's where torch runs its
    threads on it (``parallel_flags``)."""
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
    """``-fopenmp`` where torch's threads are OpenMP's (Linux wheels): ``at::parallel_for``
    is a template in torch's headers whose OpenMP region is compiled into this module, and
    without the flag it runs the whole range on the calling thread (the projections and
    the attention then ignored ``torch.set_num_threads``). The module then needs
    ``libgomp.so.1``, which torch has already loaded: one OpenMP runtime, torch's thread
    count. Elsewhere (macOS's clang has no -fopenmp) the ranges run on one thread."""
    if sys.platform.startswith("linux") and torch.backends.openmp.is_available():
        return ("-fopenmp",)
    return ()


# ------------------------------------------------------------------------ building

def failure(p: Plan) -> str | None:
    """Why the last build of ``p`` failed, or None (built, or never failed)."""
    try:
        return p.failed.read_text().strip() or None
    except OSError:
        return None


def build(p: Plan, progress: Progress | None = None) -> Path:
    """The module of ``p``, compiled now where it is not built (the foreground): under
    its lock, waiting for a live builder at most its time limit and WAIT_GRACE_S more.
    ``progress`` hears where the build is about once a second. Raises BuildFailed (and
    remembers why in ``failed.txt``)."""
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
        native_lock.release(fd)


def _wait_for_lock(p: Plan, progress: Progress | None) -> int:
    """The lock of ``p``, once no live builder holds it; BuildFailed past the holder's
    time limit and WAIT_GRACE_S."""
    start = time.monotonic()
    while (fd := native_lock.take(p.lock)) is None:
        who = native_lock.holder(p.lock) or {}
        waited = time.monotonic() - start
        if waited > p.limit_s + WAIT_GRACE_S:
            raise BuildFailed(f"another native build ({native_lock.describe(who)}) held "
                              f"its lock {p.lock} for more than {waited:.0f} s")
        if progress:
            progress(f"waiting for the native build of {native_lock.describe(who)}: "
                     f"{waited:.0f} s")
        time.sleep(1.0)
    return fd


def _compile(p: Plan, progress: Progress | None) -> None:
    """Run the compiler into a temporary name, renamed to the module when it succeeded;
    stopped at the time limit; its output kept in ``build.log``. Raises BuildFailed."""
    _clear_leftovers(p)
    tmp = p.folder / f".{EXTENSION}.{os.getpid()}.tmp.so"
    out = p.folder / f".build.{os.getpid()}.log"
    # ulimit -t: each compiler process ends after as many CPU seconds, even where this
    # process is killed; a session of its own: the whole group killed at the limit
    script = f'ulimit -t {math.ceil(p.limit_s)}; exec "$@"'
    with open(out, "wb") as sink:
        proc = subprocess.Popen(["/bin/sh", "-c", script, "sh", *p.command, "-o", str(tmp)],
                                stdin=subprocess.DEVNULL, stdout=sink, stderr=subprocess.STDOUT,
                                start_new_session=True)
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


# ------------------------------------------------------------ background and loading

def start_background(p: Plan, source: Path = SOURCE) -> str:
    """Start building ``p`` in a separate process (its own session: a Ctrl-C or a killed
    server does not stop it) unless a live process builds it now; says which."""
    who = native_lock.holder(p.lock)
    if who is not None:
        return f"a build is running ({native_lock.describe(who)})"
    with open(p.folder / "builder.log", "ab") as sink:
        proc = subprocess.Popen([sys.executable, "-m", "inkling.runtime.native_build",
                                 "--source", str(source)], stdin=subprocess.DEVNULL,
                                stdout=sink, stderr=subprocess.STDOUT, start_new_session=True)
    _STARTED.append(proc)
    return f"a build started in the background (pid {proc.pid})"


_STARTED: list[subprocess.Popen] = []   # the builders this process started (reaped at exit)


def load_module(path: Path):
    """The compiled module at ``path``, imported (torch, imported at the top, comes
    first: the module links to it)."""
    spec = importlib.util.spec_from_file_location(EXTENSION, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(argv: list[str] | None = None) -> int:
    """The background builder: build (or find built) the module, print where or why
    not; exit status 0 or 1."""
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
