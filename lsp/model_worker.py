"""The one model thread that owns the Engines and the model, and each session's worker on it:
every Engine call runs there in message order, so an edit never lands while a completion
reads, and the sessions of a TCP server take turns on the one model."""
from __future__ import annotations

import asyncio
import threading
from concurrent.futures import Future, ThreadPoolExecutor


class CancelToken:
    """Set once, from any thread; ``reason``: "cancelled", "superseded", "edited" or "closed"."""

    def __init__(self):
        self._event = threading.Event()
        self.reason: str | None = None

    def cancel(self, reason: str = "cancelled") -> None:
        if self.reason is None:
            self.reason = reason
        self._event.set()

    def is_cancelled(self) -> bool:
        return self._event.is_set()


class ModelThread:
    """Runs callables one at a time, in the order queued, on one thread for the process."""

    def __init__(self):
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="inkling-model")

    def submit(self, fn, *args, **kwargs) -> Future:
        return self._pool.submit(fn, *args, **kwargs)

    def close(self) -> None:
        """No more jobs; those queued still run (their owners cancelled theirs)."""
        self._pool.shutdown(wait=False)


class ModelWorker:
    """One session's jobs on the model thread, awaited by the event loop, and their cancel
    tokens by document uri. Without a thread given it makes its own and closes it at shutdown;
    a shared thread outlives the session. The tokens belong to the event loop; ``_queued``,
    which the model thread also updates, is under ``_lock``."""

    def __init__(self, thread: ModelThread | None = None):
        self._thread = thread or ModelThread()
        self._owns_thread = thread is None
        self._current: dict[str, CancelToken] = {}
        self._queued: set[Future] = set()
        self._lock = threading.Lock()
        self._closed = False

    @property
    def closed(self) -> bool:
        return self._closed

    def run(self, fn, *args, **kwargs) -> asyncio.Future:
        """Queue ``fn``; after shutdown a cancelled future, as the session's work is over."""
        if self._closed:
            job: Future = Future()
            job.cancel()
            return asyncio.wrap_future(job)
        job = self._thread.submit(fn, *args, **kwargs)
        with self._lock:
            self._queued.add(job)
        job.add_done_callback(self._ran)
        return asyncio.wrap_future(job)

    def _ran(self, job: Future) -> None:
        with self._lock:
            self._queued.discard(job)

    def run_after(self, fn, done) -> None:
        """Queue ``fn``, calling ``done(future)`` when it ends; nothing after shutdown."""
        if not self._closed:
            self.run(fn).add_done_callback(done)

    def start_job(self, key: str) -> CancelToken:
        """A token for a new job under ``key``; the previous job under it is superseded."""
        self.cancel_job(key, "superseded")
        token = self._current[key] = CancelToken()
        return token

    def cancel_job(self, key: str, reason: str) -> None:
        """Cancel the job under ``key``, if one runs (between two forwards)."""
        previous = self._current.get(key)
        if previous is not None:
            previous.cancel(reason)

    def finish_job(self, key: str, token: CancelToken) -> None:
        if self._current.get(key) is token:
            del self._current[key]

    def cancel_all(self) -> None:
        for token in self._current.values():
            token.cancel()

    def shutdown(self, last=None) -> asyncio.Future | None:
        """Cancel this session's jobs (the one running stops between two forwards, the queued
        ones do not start), then queue ``last``, which nothing cancels; its future, if given.
        The thread stops after it only where this worker made it."""
        self._closed = True
        self.cancel_all()
        with self._lock:
            queued = list(self._queued)
        for job in queued:
            job.cancel()
        final = None if last is None else self._thread.submit(last)
        if self._owns_thread:
            self._thread.close()
        return None if final is None else asyncio.wrap_future(final)
