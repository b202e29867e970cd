"""A build's lock, one builder per machine of what is built once and cached (the native layers,
the corpus datastore), never a wait on one that is gone: a ``flock`` the kernel releases however
its holder ends, so a dead holder's lock is free; the file names the holder for messages."""
from __future__ import annotations

import json
import logging
import os
import socket
import time
from pathlib import Path
from typing import Callable

log = logging.getLogger(__name__)


def holder(lock: Path) -> dict | None:
    """Who holds ``lock`` now ({pid, host, started}, or {}), or None where no live process does."""
    lock.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        return None if _try_flock(fd) else _read_holder(fd)
    finally:
        os.close(fd)                 # (releases the flock where this call took it)


def take(lock: Path, what: str = "a build") -> int | None:
    """The lock's descriptor, flocked and naming this process; None where a live process has it."""
    lock.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    if not _try_flock(fd):
        os.close(fd)
        return None
    left = _read_holder(fd)
    if left.get("pid"):
        log.info("taking over the lock of %s from %s (its process is gone): %s",
                 what, describe(left), lock)
    me = json.dumps({"pid": os.getpid(), "host": socket.gethostname(),
                     "started": time.time()}).encode()
    os.ftruncate(fd, 0)
    os.pwrite(fd, me, 0)
    return fd


def wait_take(lock: Path, limit_s: float, what: str = "a build",
              waiting: Callable[[dict, float], None] | None = None) -> int | None:
    """``take`` once no live process holds ``lock``, polled each second; None past ``limit_s``
    seconds. ``waiting(holder, seconds waited)`` is told of each poll that found it held."""
    start = time.monotonic()
    while (fd := take(lock, what)) is None:
        waited = time.monotonic() - start
        if waited > limit_s:
            return None
        if waiting:
            waiting(holder(lock) or {}, waited)
        time.sleep(1.0)
    return fd


def release(fd: int) -> None:
    """Empty the file and release the flock (unlinking a flocked file would split the lock)."""
    os.ftruncate(fd, 0)
    os.close(fd)


def describe(who: dict) -> str:
    """A holder in words: 'pid N on HOST, started S s ago'."""
    ago = time.time() - float(who.get("started") or time.time())
    return f"pid {who.get('pid', '?')} on {who.get('host', '?')}, started {ago:.0f} s ago"


def _try_flock(fd: int) -> bool:
    import fcntl  # lazy: POSIX only (no such module on Windows, where the engine imports this)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _read_holder(fd: int) -> dict:
    try:
        said = json.loads(os.pread(fd, 4096, 0) or b"{}")
    except (OSError, ValueError):
        return {}
    return said if isinstance(said, dict) else {}
