"""The models a TCP server's sessions load, shared: sessions whose model options agree (path,
device, dtype, threads, forward, weights) get one ModelRuntime, loaded once, and what is
attached to it (draft timing, token tables, datastores) with it. Each session's Engine keeps its own
documents and KV caches. Used only on the model thread, the owner of every load."""
from __future__ import annotations

import weakref
from pathlib import Path

from inkling.completion.progress import Progress
from inkling.runtime.model_loader import load_runtime
from inkling.runtime.model_runtime import ModelRuntime


class SharedRuntimes:
    """A loader for ``Engine(load=...)``: the last model loaded stays loaded for the next
    session; another is kept while a session's Engine holds it."""

    def __init__(self, load=load_runtime):
        self._load = load
        self._loaded: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
        self._last: ModelRuntime | None = None

    def load(self, path: str | Path, device: str = "auto", dtype: str = "auto",
             progress: Progress | None = None, threads: int = 0,
             forward: str = "auto", weights: str = "auto") -> ModelRuntime:
        key = (Path(path).expanduser().resolve(), device, dtype, threads, forward, weights)
        found = self._loaded.get(key)
        if found is None:
            found = self._loaded[key] = self._load(path, device, dtype, progress, threads,
                                                   forward, weights)
        self._last = found
        return found
