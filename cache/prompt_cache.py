"""The KV cache of one document's prompt, kept in step with the token ids it encoded.

``sync(prompt_ids)`` brings the cache up to date with a new prompt and returns the
logits at its last position, in one of three modes:

* ``full``: keep the common head, recompute from the first changed token (exact);
* ``pie``: keep every run of unchanged tokens, re-encode each changed span attending
  to what precedes it, re-rotate the keys of shifted tokens to their new positions
  (Positional Integrity Encoding), reuse values;
* ``naive``: like ``pie`` without the re-rotation (a baseline for measurement only).

Kept tokens after a change are *stale*: their keys and values were computed against
text that has since changed. When their share would pass ``stale_threshold`` the
cache is refreshed (recomputed from the first stale or changed token) instead.

A window that moves is not an edit: tokens that leave (or enter) a prompt window at
its outer edge are text the document still holds, so what follows them is shifted but
not stale. The caller names those edges as zones of the new ids (``sync(ids,
edges=((start, end), ...))``: the window's outer line, whose tokens may differ only
because tokenization starts there) when it knows no edit touched the text there.
"""
from __future__ import annotations

import logging
import os
from dataclasses import dataclass

import torch

from inkling.cache.edit_hunks import Segment, segments
from inkling.cache.rope import RopeRotator
from inkling.runtime.rotary import UnsupportedRope
from inkling.runtime.model_runtime import ModelRuntime

log = logging.getLogger("inkling.cache")
MODES = ("full", "pie", "naive")
# a draft runs with the prompt's new tokens in one forward when they are this few (the
# typing case); a larger prefill runs alone, in chunks
DRAFT_WITH_PREFILL = 64


@dataclass(frozen=True)
class SyncResult:
    logits: torch.Tensor      # [vocab] at the prompt's last position
    reused: int               # context tokens whose keys and values were kept (shifted or not)
    prefilled: int            # context tokens run through the model
    stale: int                # stale tokens in the cache after the sync
    refreshed: bool           # the sync recomputed stale tokens
    mode: str                 # the mode that did the work
    # [len(draft), vocab] at the draft's nodes when a draft ran with the prompt (the
    # cache then holds them after the prompt until ``keep_new``), else None
    draft_logits: torch.Tensor | None = None


class PromptCache:
    def __init__(self, runtime: ModelRuntime, mode: str = "full", stale_threshold: float = 0.5,
                 prefill_chunk: int = 512, forward: str = "auto"):
        if mode not in MODES:
            raise ValueError(f"cache mode must be one of {', '.join(MODES)}, got {mode!r}")
        self.runtime = runtime
        # native | compact | captured | reference: the store ``past`` is of that forward's
        # kind (native_llama.py's NativeBuffers, kv_buffers.py, captured_llama.py's
        # CapturedBuffers or dynamic_kv.py), and the runtime
        # runs the forward the store belongs to
        self.forward = runtime.forward_kind(forward)
        self.ids: list[int] = []
        self.stale: list[bool] = []
        self.past = None
        self.stale_threshold = stale_threshold
        self.prefill_chunk = prefill_chunk
        self.refreshes = 0
        self.mode = mode
        self.rotator: RopeRotator | None = None
        if mode == "pie":
            try:
                self.rotator = RopeRotator(runtime.model)
            except UnsupportedRope as exc:
                log.warning("cache mode pie is off for %s, using full: %s", runtime.path, exc)
                self.mode = "full"

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
            self.past = self.runtime.new_kv(self.forward)
        return self.past

    def reset(self) -> None:
        self.ids, self.stale, self.past = [], [], None

    def truncate(self, n: int) -> None:
        """Keep the first ``n`` cached tokens."""
        if n >= len(self.ids):
            return
        self.ids, self.stale = self.ids[:n], self.stale[:n]
        if n == 0:
            self.past = None
            return
        self.past.truncate(n)

    # ------------------------------------------------------------------ sync
    def sync(self, prompt_ids: list[int], edges: tuple[tuple[int, int], ...] = (),
             draft: tuple[list[int], list[int]] | None = None) -> SyncResult:
        """``edges``: zones ``[start, end]`` of ``prompt_ids`` at a window's outer edge
        where no edit touched the text, so a change there is the window moving.

        ``draft``: (tokens, parents) of a draft tree after the prompt (parent -1: the
        prompt's last token). When the sync only appends a few tokens, the draft runs in
        the same forward pass (``SyncResult.draft_logits``) and its nodes stay in the
        cache after the prompt, for the caller to ``keep_new`` the accepted path (or
        ``truncate`` to the prompt); otherwise it is not run."""
        if not prompt_ids:
            raise ValueError("empty prompt")
        if not self._consistent():
            log.warning("cache holds %d ids but %d cached positions; recomputing (full)",
                        len(self.ids), self._cached_len())
            self.reset()
        if self.mode == "full" or not self.ids:
            return self._sync_full(prompt_ids, refreshed=False, draft=draft)
        segs = segments(self.ids, prompt_ids)
        if edges:
            segs = _slide_to_edges(segs, self.ids, prompt_ids, edges)
        segs = _last_token_new(segs)
        stale_after = _stale_after(segs, self.stale, edges)
        if stale_after > self.stale_threshold * len(prompt_ids):
            self.refreshes += 1
            return self._sync_full(prompt_ids, refreshed=True)
        return self._splice(prompt_ids, segs, edges, draft)

    def refresh(self) -> int:
        """Recompute from the first stale token (idle time); returns tokens recomputed."""
        if not any(self.stale):
            return 0
        first = self.stale.index(True)
        rest = self.ids[first:]
        self.truncate(first)
        self.extend(rest, last_only=True)
        self.refreshes += 1
        return len(rest)

    def _sync_full(self, prompt_ids: list[int], refreshed: bool,
                   draft: tuple[list[int], list[int]] | None = None) -> SyncResult:
        keep = min(len(os.path.commonprefix([self.ids, prompt_ids])), len(prompt_ids) - 1)
        if True in self.stale[:keep]:
            keep = self.stale.index(True)
        self.truncate(keep)
        logits, drafted = self._prefill(prompt_ids[keep:], draft)
        return SyncResult(logits, keep, len(prompt_ids) - keep, 0, refreshed, "full", drafted)

    def _prefill(self, ids: list[int], draft: tuple[list[int], list[int]] | None
                 ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Run a prompt's new tokens ``ids`` after the cache: (logits [vocab] at the last
        one, None), or with a ``draft`` and few new tokens, the draft's nodes in the same
        forward pass: (logits [vocab], logits [len(draft), vocab] at its nodes)."""
        if draft is None or not draft[0] or len(ids) > DRAFT_WITH_PREFILL:
            return self.extend(ids, last_only=True)[-1], None
        tokens, parents = draft
        n = len(ids)
        chain = list(range(-1, n - 1))                  # the prompt's tokens, one after another
        out = self.extend_tree(ids + list(tokens),
                               chain + [n - 1 if p < 0 else n + p for p in parents],
                               keep_last=1 + len(tokens))              # [1 + len(draft), vocab]
        return out[0], out[1:]

    def _splice(self, prompt_ids: list[int], segs: list[Segment],
                edges: tuple[tuple[int, int], ...],
                draft: tuple[list[int], list[int]] | None = None) -> SyncResult:
        """Kept runs are gathered into their prompt positions (keys re-rotated in
        ``pie``), leaving holes where new tokens go; every new span runs through the
        model in one forward pass, each token seeing the kept entries before it and the
        new tokens up to itself; their entries then fill the holes."""
        head = segs[0]
        if len(segs) == 2 and head.kept and head.old_start == head.start == 0:
            self.truncate(len(head))               # only an append after the common head:
            logits, drafted = self._prefill(prompt_ids[len(head):], draft)   # nothing moves
            return SyncResult(logits, len(head), len(prompt_ids) - len(head),
                              self.stale_count, False, self.mode, drafted)
        new_pos = [p for seg in segs if not seg.kept for p in range(seg.start, seg.end)]
        if len(new_pos) > self.prefill_chunk:      # a large change: span by span, in order
            return self._splice_in_order(prompt_ids, segs, edges)
        n = len(prompt_ids)
        kept = torch.zeros(n, dtype=torch.bool)                          # [n]
        stale = [False] * n
        changed, old_end, reused = False, 0, 0
        for seg in segs:
            changed = changed or _edit_before(seg, old_end, edges)
            if not seg.kept:
                continue
            a, b = seg.old_start, seg.old_start + len(seg)
            if self.ids[a:b] != prompt_ids[seg.start:seg.end]:
                log.warning("hunks do not match the cached ids; recomputing (full)")
                self.reset()
                return self._sync_full(prompt_ids, refreshed=False)
            kept[seg.start:seg.end] = True
            stale[seg.start:seg.end] = [True] * len(seg) if changed else self.stale[a:b]
            old_end, reused = b, reused + len(seg)
        # no ids until the holes are filled: a forward that fails leaves a cache whose
        # length matches no ids, which the next sync resets instead of trusting
        self.ids, self.stale = [], []
        self._gather(segs)
        logits = self._run_new([prompt_ids[p] for p in new_pos], new_pos, kept)
        self.ids, self.stale = list(prompt_ids), stale
        if not self._consistent() or new_pos[-1] != n - 1:
            log.warning("spliced cache does not match the prompt; recomputing (full)")
            self.reset()
            return self._sync_full(prompt_ids, refreshed=False)
        return SyncResult(logits[-1], reused, len(new_pos), self.stale_count, False, self.mode)

    @torch.inference_mode()
    def _gather(self, segs: list[Segment]) -> None:
        """The cache in the new prompt's order: kept runs copied from their old place
        (keys re-rotated in ``pie``), zeros at new positions (masked out until
        ``_run_new`` fills them)."""
        old = torch.arange(self.past.length)
        index = torch.cat([old[seg.old_start:seg.old_start + len(seg)] if seg.kept
                           else old.new_zeros(len(seg)) for seg in segs])        # [n]
        holes = torch.cat([torch.arange(seg.start, seg.end) for seg in segs if not seg.kept])
        device = self.runtime.device
        head = segs[0]                       # a kept head at its old place is not moved
        start = len(head) if head.kept and head.old_start == 0 else 0
        self.past.gather(index.to(device), holes.to(device), start)
        if self.rotator is None or self.mode != "pie":
            return
        for seg in segs:
            if seg.kept and seg.shift:
                self.past.rotate(seg.start, seg.end, seg.shift, self.rotator.rotate)

    def _run_new(self, tokens: list[int], positions: list[int], kept: torch.Tensor
                 ) -> torch.Tensor:
        """New tokens into their holes in one forward: token i sees the kept entries
        before its position and the new tokens up to itself. ``kept``: [n] which cache
        entries are kept. Returns logits [1, vocab] (the last token's)."""
        dtype, device = self.runtime.dtype, self.runtime.device
        new = torch.tensor(positions)                                   # [m]
        n, m = len(kept), len(tokens)
        before = torch.arange(n)[None, :] < new[:, None]                # [m, n]
        sees = torch.cat((before & kept[None, :],                       # [m, n + m]
                          torch.ones(m, m, dtype=torch.bool).tril()), dim=1)
        mask = torch.zeros(sees.shape, dtype=dtype).masked_fill(~sees, torch.finfo(dtype).min)
        x = torch.tensor([tokens], dtype=torch.long)                    # [1, m]
        logits = self.runtime.forward(x, self.past, position_ids=new[None].to(device),
                                      attention_mask=mask[None, None].to(device), last_only=True)
        self._fill_holes(new.to(device), n)
        return logits[0]

    @torch.inference_mode()
    def _fill_holes(self, holes: torch.Tensor, n: int) -> None:
        """Move the entries appended after the ``n`` gathered ones into ``holes`` [m]."""
        self.past.fill_holes(holes, n)

    def _splice_in_order(self, prompt_ids: list[int], segs: list[Segment],
                         edges: tuple[tuple[int, int], ...]) -> SyncResult:
        """The splice span by span (for changes too large for one masked forward)."""
        old_ids, old_stale, old_kv = self.ids, self.stale, self.past
        self.past, self.ids, self.stale = old_kv.empty_like(), [], []
        changed, old_end, reused, prefilled, logits = False, 0, 0, 0, None
        for seg in segs:
            changed = changed or _edit_before(seg, old_end, edges)
            if seg.kept:
                self._append_kept(old_kv, seg)
                self.ids.extend(old_ids[seg.old_start:seg.old_start + len(seg)])
                self.stale.extend(changed or s for s in old_stale[seg.old_start:seg.old_start
                                                                   + len(seg)])
                old_end, reused = seg.old_start + len(seg), reused + len(seg)
            else:
                logits = self.extend(prompt_ids[seg.start:seg.end], last_only=True)
                prefilled += len(seg)
        if self.ids != prompt_ids or not self._consistent():
            log.warning("spliced cache does not match the prompt; recomputing (full)")
            self.reset()
            return self._sync_full(prompt_ids, refreshed=False)
        return SyncResult(logits[-1], reused, prefilled, self.stale_count, False, self.mode)

    @torch.inference_mode()
    def _append_kept(self, old_kv, seg: Segment) -> None:
        rotate = self.rotator.rotate if self.rotator is not None and self.mode == "pie" else None
        self.past.append_from(old_kv, seg.old_start, seg.old_start + len(seg), seg.shift, rotate)

    def _cached_len(self) -> int:
        return 0 if self.past is None else self.past.get_seq_length()

    def _consistent(self) -> bool:
        return self._cached_len() == len(self.ids) == len(self.stale)

    # ---------------------------------------------------------- verification
    def extend_tree(self, tokens: list[int], parents: list[int], keep_last: int = 0
                    ) -> torch.Tensor:
        """Run a token tree after the cached tokens in one forward pass.

        ``parents[i]`` is the index of node i's parent (-1 for a root). Each node
        attends to the whole cache, its ancestors and itself, at position
        ``past + depth``. Returns logits [n, vocab] (or of the last ``keep_last`` nodes);
        the cache then holds every node (``keep_new`` keeps the accepted path).
        """
        from inkling.cache.tree_mask import tree_mask
        positions, mask = tree_mask(parents, len(self.ids), self.runtime.dtype)  # [n], [n, L]
        return self._run_masked(tokens, positions[None], mask, keep_last)

    def extend_masked(self, tokens: list[int], positions: list[int], visible: list[list[int]],
                      shared: int, keep_last: int = 0) -> torch.Tensor:
        """Run new tokens at explicit positions, token i seeing the first ``shared``
        cached entries plus the entries listed in ``visible[i]`` (itself included).

        One forward pass with a 4D additive mask [1, 1, n, past + n]; returns logits
        [n, vocab] (or [keep_last, vocab] for the last ones). The new entries are
        appended to the cache in order.
        """
        past, n = len(self.ids), len(tokens)
        dtype = self.runtime.dtype
        mask = torch.zeros((n, past + n), dtype=dtype)                          # [n, past + n]
        mask[:, shared:] = torch.finfo(dtype).min
        mask[[i for i, cols in enumerate(visible) for _ in cols],             # one indexed write
             [c for cols in visible for c in cols]] = 0
        return self._run_masked(tokens, torch.tensor([positions]), mask, keep_last)

    def _run_masked(self, tokens: list[int], positions: torch.Tensor, mask: torch.Tensor,
                    keep_last: int) -> torch.Tensor:
        """tokens at ``positions`` [1, n] under the additive ``mask`` [n, past + n]: logits
        [n or keep_last, vocab]; the entries are appended to the cache."""
        device = self.runtime.device
        x = torch.tensor([tokens], dtype=torch.long)                             # [1, n]
        logits = self.runtime.forward(x, self._store(), position_ids=positions.to(device),
                                      attention_mask=mask[None, None].to(device),
                                      keep_last=keep_last)
        self.ids.extend(tokens)
        self.stale.extend([False] * len(tokens))
        return logits[0]

    def extend_embeds(self, embeds: torch.Tensor) -> torch.Tensor:
        """Run input embeddings [n, hidden] after the cached tokens (superposed decoding):
        returns logits [n, vocab]. Their cache entries hold no token (id -1), so the next
        sync recomputes from them; truncate them away when done."""
        start, n = len(self.ids), embeds.shape[0]
        pos = torch.arange(start, start + n, device=self.runtime.device)[None]     # [1, n]
        logits = self.runtime.forward_embeds(embeds[None], self._store(), pos)
        self.ids.extend([-1] * n)
        self.stale.extend([False] * n)
        return logits[0]

    @torch.inference_mode()
    def keep_new(self, start: int, keep: list[int]) -> None:
        """Of the entries from ``start`` on, keep those at offsets ``keep`` (increasing).

        The kept entries move down into the first ``len(keep)`` new slots (the new
        entries are this cache's own, written by the last forward), and the rest is cut
        off: nothing before ``start`` is copied."""
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
        """Recompute the last ``n`` cached entries in one plain forward (causal, no tree
        mask), as a prefill of ``n`` tokens computes them (``last_only``: the output layer
        on the last row only; a greedy step of ``n`` tokens runs it on every row); returns
        the logits [vocab] at the last. Decoding re-decides a near-tie this way:
        a row of a draft tree's forward sums its floats in another order than the
        forward greedy decoding runs, and where the top two logits are that close the
        order can change the argmax."""
        ids = self.ids[len(self.ids) - n:]
        self.truncate(len(self.ids) - n)
        return self.extend(ids, last_only=last_only)[-1]

    @torch.inference_mode()
    def gathered(self, entries: list[int]) -> "PromptCache":
        """A new cache (``full``) holding this cache's ``entries`` (indices, in order) one
        after another: one branch's own sequence out of a cache that several branches
        share, for a forward in the shape decoding that sequence alone would run."""
        out = PromptCache(self.runtime, "full", self.stale_threshold, self.prefill_chunk,
                          self.forward)
        index = torch.tensor(entries, dtype=torch.long, device=self.runtime.device)
        out.past = self.past.select(index)
        out.ids = [self.ids[e] for e in entries]
        out.stale = [self.stale[e] for e in entries]
        return out

    # ---------------------------------------------------------------- extend
    def extend(self, ids: list[int], last_only: bool = False) -> torch.Tensor:
        """Run ``ids`` after the cached tokens: returns logits [len(ids), vocab], or
        [1, vocab] for the last one with ``last_only`` (a prompt's prefill)."""
        self._store()
        outs = []
        for i in range(0, len(ids), self.prefill_chunk):
            chunk = ids[i:i + self.prefill_chunk]
            last = i + self.prefill_chunk >= len(ids)
            start = len(self.ids)
            x = torch.tensor([chunk], dtype=torch.long)                      # [1, n]
            pos = torch.arange(start, start + len(chunk), device=self.runtime.device)[None]
            logits = self.runtime.forward(x, self.past, position_ids=pos,
                                          last_only=last_only)[0]            # [n or 1, vocab]
            if last or not last_only:
                outs.append(logits)
            self.ids.extend(chunk)
            self.stale.extend([False] * len(chunk))
        return torch.cat(outs)


def _last_token_new(segs: list[Segment]) -> list[Segment]:
    """The last token must be run through the model: its logits are not cached."""
    last = segs[-1]
    if not last.kept:
        return segs
    head = [Segment(last.start, last.end - 1, last.old_start)] if len(last) > 1 else []
    return segs[:-1] + head + [Segment(last.end - 1, last.end, None)]


def _slide_to_edges(segs: list[Segment], old_ids: list[int], new_ids: list[int],
                    edges: tuple[tuple[int, int], ...]) -> list[Segment]:
    """Move each deletion between two kept runs onto a window edge inside them when the
    ids allow it: a window that moved drops whole lines at its edge, but the diff may
    place the cut a few tokens off where the lines begin alike (``value_1`` / ``value_2``)."""
    out = list(segs)
    for i in range(len(out) - 1):
        a, b = out[i], out[i + 1]
        if not (a.kept and b.kept) or b.start != a.end:
            continue
        gap = b.old_start - (a.old_start + len(a))
        if gap <= 0:
            continue
        for e in sorted(start for start, _ in edges):
            if not a.start < e < b.end or e == b.start:
                continue
            if e < b.start:       # new[e:b.start] are the old ids just before b's run
                ok = old_ids[a.old_start + (e - a.start) + gap:b.old_start] == new_ids[e:b.start]
            else:                 # new[b.start:e] are the old ids just after a's run
                after = a.old_start + len(a)
                ok = old_ids[after:after + (e - b.start)] == new_ids[b.start:e]
            if ok:
                out[i] = Segment(a.start, e, a.old_start)
                out[i + 1] = Segment(e, b.end, a.old_start + (e - a.start) + gap)
                break
    return out


def _edit_before(seg: Segment, old_end: int, edges: tuple[tuple[int, int], ...]) -> bool:
    """Whether ``seg`` starts with an edit: it is new, or old tokens before it were
    dropped; unless it starts in the zone of a window edge that moved (no edit there)."""
    if any(start <= seg.start <= end for start, end in edges):
        return False
    return not seg.kept or seg.old_start != old_end


def _stale_after(segs: list[Segment], old_stale: list[bool],
                 edges: tuple[tuple[int, int], ...] = ()) -> int:
    """How many tokens a splice along ``segs`` would leave stale."""
    changed, old_end, stale = False, 0, 0
    for seg in segs:
        changed = changed or _edit_before(seg, old_end, edges)
        if not seg.kept:
            continue
        stale += len(seg) if changed else sum(old_stale[seg.old_start:seg.old_start + len(seg)])
        old_end = seg.old_start + len(seg)
    return stale
