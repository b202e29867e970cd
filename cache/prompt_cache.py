"""The KV cache of one document's prompt, kept in step with the token ids it encoded.

``full`` recomputes from the first changed token; ``pie`` keeps unchanged runs, re-rotates
shifted keys and runs the changed spans (``splice.py``); ``naive`` is ``pie`` without the
re-rotation. Kept tokens after a change are stale, and past ``stale_threshold`` of the prompt
a sync recomputes instead (docs/decisions/pie-cache.md)."""
from __future__ import annotations

import logging
import os
from dataclasses import dataclass

import torch

from inkling.cache import splice
from inkling.cache.modes import MODES, CacheMode
from inkling.cache.rope import RopeRotator
from inkling.cache.tree_mask import tree_mask
from inkling.runtime.rotary import UnsupportedRope
from inkling.runtime.model_runtime import ModelRuntime

log = logging.getLogger("inkling.cache")
# a draft shares the prefill's forward when the prompt adds at most this many tokens
DRAFT_WITH_PREFILL = 64


@dataclass(frozen=True)
class SyncResult:
    logits: torch.Tensor      # [vocab] at the prompt's last position
    reused: int               # context tokens whose keys and values were kept (shifted or not)
    prefilled: int            # context tokens run through the model
    stale: int                # stale tokens in the cache after the sync
    refreshed: bool           # the sync recomputed stale tokens
    mode: CacheMode           # the mode that did the work
    draft_logits: torch.Tensor | None = None   # [len(draft), vocab] if a draft ran, else None


class PromptCache:
    def __init__(self, runtime: ModelRuntime, mode: str = CacheMode.FULL, stale_threshold: float = 0.5,
                 prefill_chunk: int = 512, forward: str = "auto"):
        if mode not in MODES:
            raise ValueError(f"cache mode must be one of {', '.join(MODES)}, got {mode!r}")
        self.runtime = runtime
        # chosen once (runtime/forwards.py); ``past`` is its store, made on first use
        self.forward = runtime.forward_for(forward)
        self.ids: list[int] = []
        self.stale: list[bool] = []
        self.past = None
        self.stale_threshold = stale_threshold
        self.prefill_chunk = prefill_chunk
        self.mode = CacheMode(mode)
        self.rotator: RopeRotator | None = None
        if self.mode == CacheMode.PIE:
            try:
                self.rotator = RopeRotator(runtime.model)
            except UnsupportedRope as exc:
                log.warning("cache mode pie is off for %s, using full: %s", runtime.path, exc)
                self.mode = CacheMode.FULL

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def stale_count(self) -> int:
        return sum(self.stale)

    def nbytes(self) -> int:
        return 0 if self.past is None else self.past.nbytes()

    def _store(self):
        """The key/value store, made on first use."""
        if self.past is None:
            self.past = self.forward.new_store()
        return self.past

    def reset(self) -> None:
        self.ids, self.stale, self.past = [], [], None

    def consistent(self) -> bool:
        """Whether the store holds one entry for each id (and stale flag), in every layer."""
        held = {0} if self.past is None else self.past.lengths()
        return held == {len(self.ids)} and len(self.ids) == len(self.stale)

    def truncate(self, n: int) -> None:
        """Keep the first ``n`` cached tokens."""
        if n >= len(self.ids):
            return
        self.ids, self.stale = self.ids[:n], self.stale[:n]
        if n == 0:
            self.past = None
            return
        self.past.truncate(n)

    def sync(self, prompt_ids: list[int], edges: tuple[tuple[int, int], ...] = (),
             draft: tuple[list[int], list[int]] | None = None) -> SyncResult:
        """Bring the cache to ``prompt_ids``. ``edges``: zones [start, end] at a window's outer edge
        no edit touched (shifted, not stale). ``draft``: (tokens, parents; -1 the last prompt
        token), run in a short prefill's forward, left cached for ``keep_new`` or ``truncate``."""
        if not prompt_ids:
            raise ValueError("empty prompt")
        if not self.consistent():
            log.warning("cache holds %d ids but %d cached positions; recomputing (full)",
                        len(self.ids), _stored(self.past))
            self.reset()
        if self.mode == CacheMode.FULL or not self.ids:
            return self._sync_full(prompt_ids, refreshed=False, draft=draft)
        segs = splice.plan(self.ids, prompt_ids, edges)
        if splice.stale_after(segs, self.stale, edges) > self.stale_threshold * len(prompt_ids):
            return self._sync_full(prompt_ids, refreshed=True)
        head = segs[0]
        if len(segs) == 2 and head.kept and head.old_start == head.start == 0:
            self.truncate(len(head))               # only an append after the common head:
            logits, drafted = self._prefill(prompt_ids[len(head):], draft)   # nothing moves
            return SyncResult(logits, len(head), len(prompt_ids) - len(head),
                              self.stale_count, False, self.mode, drafted)
        spliced = splice.splice(self, prompt_ids, segs, edges)
        if spliced is None:
            self.reset()
            return self._sync_full(prompt_ids, refreshed=False)
        logits, reused, prefilled = spliced
        return SyncResult(logits, reused, prefilled, self.stale_count, False, self.mode)

    def refresh(self) -> int:
        """Recompute from the first stale token (idle time); returns tokens recomputed."""
        if not any(self.stale):
            return 0
        first = self.stale.index(True)
        rest = self.ids[first:]
        self.truncate(first)
        self.extend(rest, last_only=True)
        return len(rest)

    def _sync_full(self, prompt_ids: list[int], refreshed: bool,
                   draft: tuple[list[int], list[int]] | None = None) -> SyncResult:
        keep = min(len(os.path.commonprefix([self.ids, prompt_ids])), len(prompt_ids) - 1)
        if True in self.stale[:keep]:
            keep = self.stale.index(True)
        self.truncate(keep)
        logits, drafted = self._prefill(prompt_ids[keep:], draft)
        return SyncResult(logits, keep, len(prompt_ids) - keep, 0, refreshed, CacheMode.FULL,
                          drafted)

    def _prefill(self, ids: list[int], draft: tuple[list[int], list[int]] | None
                 ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Prefill ``ids``: (logits [vocab] at the last, draft's [len(draft), vocab] or None)."""
        if draft is None or not draft[0] or len(ids) > DRAFT_WITH_PREFILL:
            return self.extend(ids, last_only=True)[-1], None
        tokens, parents = draft
        n = len(ids)
        chain = list(range(-1, n - 1))                  # the prompt's tokens, one after another
        out = self.extend_tree(ids + list(tokens),
                               chain + [n - 1 if p < 0 else n + p for p in parents],
                               keep_last=1 + len(tokens))              # [1 + len(draft), vocab]
        return out[0], out[1:]

    def extend_tree(self, tokens: list[int], parents: list[int], keep_last: int = 0
                    ) -> torch.Tensor:
        """Run a token tree (``parents[i]``: node i's parent, -1 for a root) after the cache in
        one forward: logits [n or keep_last, vocab]; every node stays cached until ``keep_new``."""
        positions, mask = tree_mask(parents, len(self.ids), self.runtime.dtype)  # [n], [n, L]
        return self._run_masked(tokens, positions[None], mask, keep_last)

    def extend_masked(self, tokens: list[int], positions: list[int], visible: list[list[int]],
                      shared: int, keep_last: int = 0) -> torch.Tensor:
        """Run tokens at ``positions``, token i seeing ``shared`` entries and ``visible[i]``."""
        past, n = len(self.ids), len(tokens)
        dtype = self.runtime.dtype
        mask = torch.zeros((n, past + n), dtype=dtype)                          # [n, past + n]
        mask[:, shared:] = torch.finfo(dtype).min
        mask[[i for i, cols in enumerate(visible) for _ in cols],             # one indexed write
             [c for cols in visible for c in cols]] = 0
        return self._run_masked(tokens, torch.tensor([positions]), mask, keep_last)

    def _run_masked(self, tokens: list[int], positions: torch.Tensor, mask: torch.Tensor,
                    keep_last: int) -> torch.Tensor:
        """Run ``tokens`` at ``positions`` [1, n] under the additive ``mask`` [n, past + n]."""
        device = self.runtime.device
        x = torch.tensor([tokens], dtype=torch.long)                             # [1, n]
        logits = self.runtime.forward(self.forward, x, self._store(),
                                      position_ids=positions.to(device),
                                      attention_mask=mask[None, None].to(device),
                                      keep_last=keep_last)
        self.ids.extend(tokens)
        self.stale.extend([False] * len(tokens))
        return logits[0]

    def extend_embeds(self, embeds: torch.Tensor) -> torch.Tensor:
        """Run embeddings [n, hidden] after the cache, cached as id -1 for a sync to recompute."""
        start, n = len(self.ids), embeds.shape[0]
        pos = torch.arange(start, start + n, device=self.runtime.device)[None]     # [1, n]
        logits = self.runtime.forward_embeds(self.forward, embeds[None], self._store(), pos)
        self.ids.extend([-1] * n)
        self.stale.extend([False] * n)
        return logits[0]

    @torch.inference_mode()
    def keep_new(self, start: int, keep: list[int]) -> None:
        """Of the entries from ``start`` on, keep those at offsets ``keep`` (increasing)."""
        if keep == list(range(len(keep))):            # the accepted path is a prefix
            if start + len(keep) < len(self.ids):
                self.truncate(start + len(keep))
            return
        end = start + len(keep)
        self.past.keep(start, torch.tensor(keep, device=self.runtime.device))
        self.ids[start:end] = [self.ids[start + i] for i in keep]
        self.stale[start:end] = [self.stale[start + i] for i in keep]
        del self.ids[end:], self.stale[end:]

    def rerun(self, n: int, last_only: bool = True) -> torch.Tensor:
        """Recompute the last ``n`` entries in a plain causal forward: logits [vocab] at the last.
        A tree's forward sums in another order than greedy's, which can flip a near-tie."""
        ids = self.ids[len(self.ids) - n:]
        self.truncate(len(self.ids) - n)
        return self.extend(ids, last_only=last_only)[-1]

    @torch.inference_mode()
    def gathered(self, entries: list[int]) -> "PromptCache":
        """A new ``full`` cache of this one's ``entries`` in order: one branch of a shared cache."""
        out = PromptCache(self.runtime, CacheMode.FULL, self.stale_threshold, self.prefill_chunk,
                          self.forward.name)
        out.forward = self.forward
        index = torch.tensor(entries, dtype=torch.long, device=self.runtime.device)
        out.past = self.past.select(index)
        out.ids = [self.ids[e] for e in entries]
        out.stale = [self.stale[e] for e in entries]
        return out

    def extend(self, ids: list[int], last_only: bool = False) -> torch.Tensor:
        """Run ``ids`` after the cache, in chunks: logits [len(ids) or 1 (``last_only``), vocab]."""
        self._store()
        outs = []
        for i in range(0, len(ids), self.prefill_chunk):
            chunk = ids[i:i + self.prefill_chunk]
            last = i + self.prefill_chunk >= len(ids)
            start = len(self.ids)
            x = torch.tensor([chunk], dtype=torch.long)                      # [1, n]
            pos = torch.arange(start, start + len(chunk), device=self.runtime.device)[None]
            logits = self.runtime.forward(self.forward, x, self.past, position_ids=pos,
                                          last_only=last_only)[0]            # [n or 1, vocab]
            if last or not last_only:
                outs.append(logits)
            self.ids.extend(chunk)
            self.stale.extend([False] * len(chunk))
        return torch.cat(outs)


def _stored(past) -> int:
    """The entries a key/value store holds (0 before it is made)."""
    return 0 if past is None else past.get_seq_length()
