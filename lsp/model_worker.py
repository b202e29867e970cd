"""The one worker thread that owns the Engine, and cancellation tokens for its jobs: every
Engine call runs there in message order, so an edit never lands while a completion reads."""
from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor


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


class ModelWorker:
    """Runs callables one at a time off the event loop; the loop awaits their results."""

    def __init__(self):
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="inkling-model")
        self._current: dict[str, CancelToken] = {}
        self._closed = False

    @property
    def closed(self) -> bool:
        return self._closed

    def run(self, fn, *args, **kwargs) -> asyncio.Future:
        return asyncio.wrap_future(self._pool.submit(fn, *args, **kwargs))

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

    def shutdown(self) -> None:
        self._closed = True
        self.cancel_all()
        self._pool.shutdown(wait=False, cancel_futures=True)
