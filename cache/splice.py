"""The splice of a ``pie`` or ``naive`` sync: kept runs moved to their new positions in a
``PromptCache`` (keys re-rotated in ``pie``: ``rope.py``), new tokens run into the holes."""
from __future__ import annotations

import logging

import torch

from inkling.cache.edit_hunks import Segment, segments
from inkling.cache.modes import CacheMode

log = logging.getLogger("inkling.cache")
Edges = tuple[tuple[int, int], ...]      # zones [start, end] at a window's moved edges
Spliced = tuple[torch.Tensor, int, int]  # (logits [vocab] at the last position, reused, prefilled)


def plan(old_ids: list[int], new_ids: list[int], edges: Edges) -> list[Segment]:
    """Segments of ``new_ids`` (kept runs, new spans), deletions slid onto ``edges``, last new."""
    segs = segments(old_ids, new_ids)
    if edges:
        segs = _slide_to_edges(segs, old_ids, new_ids, edges)
    return _last_token_new(segs)


def splice(cache, prompt_ids: list[int], segs: list[Segment], edges: Edges) -> Spliced | None:
    """Rewrite ``cache`` to ``prompt_ids`` along ``segs``, all new spans in one forward; None
    (warned) where the result does not match the prompt, for the caller to recompute."""
    new_pos = [p for seg in segs if not seg.kept for p in range(seg.start, seg.end)]
    if len(new_pos) > cache.prefill_chunk:      # a large change: span by span, in order
        return _splice_in_order(cache, prompt_ids, segs, edges)
    n = len(prompt_ids)
    kept = torch.zeros(n, dtype=torch.bool)                          # [n]
    stale = [False] * n
    changed, old_end, reused = False, 0, 0
    for seg in segs:
        changed = changed or _edit_before(seg, old_end, edges)
        if not seg.kept:
            continue
        a, b = seg.old_start, seg.old_start + len(seg)
        if cache.ids[a:b] != prompt_ids[seg.start:seg.end]:
            log.warning("hunks do not match the cached ids; recomputing (full)")
            return None
        kept[seg.start:seg.end] = True
        stale[seg.start:seg.end] = [True] * len(seg) if changed else cache.stale[a:b]
        old_end, reused = b, reused + len(seg)
    # no ids until the holes are filled, so a failed forward leaves a cache the next sync resets
    cache.ids, cache.stale = [], []
    _gather(cache, segs)
    logits = _run_new(cache, [prompt_ids[p] for p in new_pos], new_pos, kept)
    cache.ids, cache.stale = list(prompt_ids), stale
    if not cache.consistent() or new_pos[-1] != n - 1:
        log.warning("spliced cache does not match the prompt; recomputing (full)")
        return None
    return logits[-1], reused, len(new_pos)


def _rotate(cache):
    """``RopeRotator.rotate`` in ``pie`` mode, else None (shifted keys keep their rotation)."""
    pie = cache.rotator is not None and cache.mode == CacheMode.PIE
    return cache.rotator.rotate if pie else None


@torch.inference_mode()
def _gather(cache, segs: list[Segment]) -> None:
    """Reorder the store to the new prompt: kept runs moved, zeros in the holes."""
    old = torch.arange(cache.past.length)
    index = torch.cat([old[seg.old_start:seg.old_start + len(seg)] if seg.kept
                       else old.new_zeros(len(seg)) for seg in segs])        # [n]
    holes = torch.cat([torch.arange(seg.start, seg.end) for seg in segs if not seg.kept])
    device = cache.runtime.device
    head = segs[0]                       # a kept head at its old place is not moved
    start = len(head) if head.kept and head.old_start == 0 else 0
    cache.past.gather(index.to(device), holes.to(device), start)
    rotate = _rotate(cache)
    if rotate is None:
        return
    for seg in segs:
        if seg.kept and seg.shift:
            cache.past.rotate(seg.start, seg.end, seg.shift, rotate)


def _run_new(cache, tokens: list[int], positions: list[int], kept: torch.Tensor
             ) -> torch.Tensor:
    """Run new tokens into their holes, each seeing the ``kept`` [n] entries before it."""
    dtype, device = cache.runtime.dtype, cache.runtime.device
    new = torch.tensor(positions)                                   # [m]
    n, m = len(kept), len(tokens)
    before = torch.arange(n)[None, :] < new[:, None]                # [m, n]
    sees = torch.cat((before & kept[None, :],                       # [m, n + m]
                      torch.ones(m, m, dtype=torch.bool).tril()), dim=1)
    mask = torch.zeros(sees.shape, dtype=dtype).masked_fill(~sees, torch.finfo(dtype).min)
    x = torch.tensor([tokens], dtype=torch.long)                    # [1, m]
    logits = cache.runtime.forward(cache.forward, x, cache.past,
                                   position_ids=new[None].to(device),
                                   attention_mask=mask[None, None].to(device), last_only=True)
    holes = new.to(device)
    with torch.inference_mode():       # the entries appended after the n gathered ones
        cache.past.fill_holes(holes, n)                             # into ``holes`` [m]
    return logits[0]


def _splice_in_order(cache, prompt_ids: list[int], segs: list[Segment],
                     edges: Edges) -> Spliced | None:
    """The splice span by span, for changes too large for one masked forward."""
    old_ids, old_stale, old_kv = cache.ids, cache.stale, cache.past
    cache.past, cache.ids, cache.stale = old_kv.empty_like(), [], []
    changed, old_end, reused, prefilled, logits = False, 0, 0, 0, None
    for seg in segs:
        changed = changed or _edit_before(seg, old_end, edges)
        if seg.kept:
            _append_kept(cache, old_kv, seg)
            cache.ids.extend(old_ids[seg.old_start:seg.old_start + len(seg)])
            cache.stale.extend(changed or s for s in old_stale[seg.old_start:seg.old_start
                                                                + len(seg)])
            old_end, reused = seg.old_start + len(seg), reused + len(seg)
        else:
            logits = cache.extend(prompt_ids[seg.start:seg.end], last_only=True)
            prefilled += len(seg)
    if cache.ids != prompt_ids or not cache.consistent():
        log.warning("spliced cache does not match the prompt; recomputing (full)")
        return None
    return logits[-1], reused, prefilled


@torch.inference_mode()
def _append_kept(cache, old_kv, seg: Segment) -> None:
    cache.past.append_from(old_kv, seg.old_start, seg.old_start + len(seg), seg.shift,
                           _rotate(cache))


def _last_token_new(segs: list[Segment]) -> list[Segment]:
    """Make the last token new: its logits are not cached."""
    last = segs[-1]
    if not last.kept:
        return segs
    head = [Segment(last.start, last.end - 1, last.old_start)] if len(last) > 1 else []
    return segs[:-1] + head + [Segment(last.end - 1, last.end, None)]


def _slide_to_edges(segs: list[Segment], old_ids: list[int], new_ids: list[int],
                    edges: Edges) -> list[Segment]:
    """Move each deletion between two kept runs onto a window edge where the ids allow: the
    diff may cut a few tokens off the dropped lines' edge where lines begin alike."""
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


def _edit_before(seg: Segment, old_end: int, edges: Edges) -> bool:
    """Whether ``seg`` is new or follows dropped tokens, outside a moved window edge's zone."""
    if any(start <= seg.start <= end for start, end in edges):
        return False
    return not seg.kept or seg.old_start != old_end


def stale_after(segs: list[Segment], old_stale: list[bool], edges: Edges = ()) -> int:
    """How many tokens a splice along ``segs`` would leave stale."""
    changed, old_end, stale = False, 0, 0
    for seg in segs:
        changed = changed or _edit_before(seg, old_end, edges)
        if not seg.kept:
            continue
        stale += len(seg) if changed else sum(old_stale[seg.old_start:seg.old_start + len(seg)])
        old_end = seg.old_start + len(seg)
    return stale
