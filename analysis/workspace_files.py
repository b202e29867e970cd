"""The one reader of files under the workspace folders (the walk, the watcher, the editor's
``didChangeWatchedFiles``, the context block, imported definitions, .gitignore rules), so that no
file there can stall the thread that reads it: only a regular file is opened, without blocking
(a FIFO swapped in after the check cannot hold the open), within a size cap and a time bound.
What is skipped is logged once per path."""
from __future__ import annotations

import logging
import os
import stat
import threading
import time
from pathlib import Path

log = logging.getLogger("inkling.workspace")

MAX_FILE_BYTES = 1 << 20         # larger workspace files are skipped
READ_SECONDS = 2.0               # a read still going past this is abandoned (a slow mount)
CHUNK = 1 << 16
_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)
_KINDS = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a device"),
          (stat.S_ISBLK, "a device"), (stat.S_ISDIR, "a folder"))

_said: set[str] = set()          # paths whose skip was logged (under _said_lock: any thread reads)
_said_lock = threading.Lock()
_SAID_MAX = 4096


def read_bytes(path: Path | str, max_bytes: int = MAX_FILE_BYTES, follow_symlinks: bool = True
               ) -> tuple[bytes | None, str]:
    """(the file's bytes, "") or (None, why it was skipped: "symlinks", "special files",
    "huge files", "vanished files", "unreadable files", "slow files")."""
    path = os.fspath(path)
    try:
        st = os.lstat(path)
        if stat.S_ISLNK(st.st_mode):
            if not follow_symlinks:
                return None, "symlinks"
            st = os.stat(path)
        why = _refused(path, st, max_bytes)
        if why:
            return None, why
        fd = os.open(path, _FLAGS | (0 if follow_symlinks else getattr(os, "O_NOFOLLOW", 0)))
    except FileNotFoundError:
        return None, "vanished files"
    except OSError as exc:
        return _skip(path, "unreadable files", f"unreadable ({exc.strerror})")
    try:
        why = _refused(path, os.fstat(fd), max_bytes)       # what was opened, not what was seen
        return (None, why) if why else _read(path, fd, max_bytes)
    except OSError as exc:
        return _skip(path, "unreadable files", f"unreadable ({exc.strerror})")
    finally:
        os.close(fd)


def read_text(path: Path | str, max_bytes: int = MAX_FILE_BYTES, errors: str = "strict",
              follow_symlinks: bool = True) -> tuple[str | None, str]:
    """(text, "") or (None, why): ``read_bytes`` decoded as UTF-8 ("non-UTF-8 files")."""
    data, why = read_bytes(path, max_bytes, follow_symlinks)
    if data is None:
        return None, why
    try:
        return data.decode("utf-8", errors), ""
    except UnicodeDecodeError:
        return None, "non-UTF-8 files"


def _refused(path: str, st: os.stat_result, max_bytes: int) -> str:
    """Why ``path`` (as ``st`` says) is not read, logged once; "" for a regular file in the cap."""
    if not stat.S_ISREG(st.st_mode):
        kind = next((name for test, name in _KINDS if test(st.st_mode)), "not a regular file")
        return _skip(path, "special files", f"{kind}, not read")[1]
    if st.st_size > max_bytes:
        return _skip(path, "huge files", f"over {max_bytes} bytes, not read")[1]
    return ""


def _read(path: str, fd: int, max_bytes: int) -> tuple[bytes | None, str]:
    """At most ``max_bytes`` from ``fd``, within READ_SECONDS."""
    chunks, size, deadline = [], 0, time.monotonic() + READ_SECONDS
    while chunk := os.read(fd, CHUNK):
        chunks.append(chunk)
        size += len(chunk)
        if size > max_bytes:
            return _skip(path, "huge files", f"grew over {max_bytes} bytes, not read")
        if time.monotonic() > deadline:
            return _skip(path, "slow files", f"not read within {READ_SECONDS:g} s")
    return b"".join(chunks), ""


def _skip(path: str, reason: str, detail: str) -> tuple[None, str]:
    """(None, reason), ``path`` and ``detail`` logged the first time ``path`` is skipped."""
    with _said_lock:
        first = path not in _said and len(_said) < _SAID_MAX
        if first:
            _said.add(path)
    if first:
        log.info("workspace file %s: %s", path, detail)
    return None, reason
