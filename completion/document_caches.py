"""Each open document's prompt cache, made at its first completion and kept within one
memory budget (``cache.budget_mb``) for all of them."""
from __future__ import annotations

from inkling.cache.cache_pool import CachePool
from inkling.cache.prompt_cache import PromptCache
from inkling.runtime.model_runtime import ModelRuntime

from inkling.completion.options import InklingOptions


class DocumentCaches(CachePool[PromptCache]):
    def __init__(self, options: InklingOptions):
        super().__init__(options.cache.budget_mb << 20, lambda c: c.nbytes())

    def of(self, uri: str, runtime: ModelRuntime, o: InklingOptions) -> PromptCache:
        """The document's prompt cache, made as the options ``o`` say at its first use."""
        return self.get(uri, lambda: PromptCache(
            runtime, o.cache.mode, o.cache.stale_threshold, forward=o.model.forward))

    def reconfigure(self, old: InklingOptions, new: InklingOptions) -> None:
        """Drop every cache ``new`` options would make otherwise, and take ``new``'s budget."""
        if new.model != old.model or (
                new.cache.mode, new.cache.stale_threshold, new.completion.fim_order) != (
                old.cache.mode, old.cache.stale_threshold, old.completion.fim_order):
            self.clear()
        self.budget_bytes = new.cache.budget_mb << 20

    def refresh_idle(self, quiet_ms: float, wait_ms: int) -> int:
        """Recompute the newest cache's stale tokens once ``quiet_ms`` reaches ``wait_ms`` (0:
        never); returns the tokens recomputed."""
        if not wait_ms or quiet_ms < wait_ms:
            return 0
        cache = self.most_recent()
        return cache.refresh() if cache is not None else 0
