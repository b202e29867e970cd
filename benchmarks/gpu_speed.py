"""What a decoding step costs on a device (``gpu_suite.py``'s speed sections).

- ``copy_bandwidth``: a large device-to-device copy, bytes read plus bytes written over
  its median time: the bound a one-row step is held to (its weight bytes over this);
- ``step_ms``: ms of one forward of ``rows`` rows after ``cached`` entries, as decoding
  runs it (the forward, then the argmax read back); the cache's entries are random
  (attention costs the same whatever they hold), its length put back after each step;
  a captured forward's graph replay alone beside it (CUDA events);
- ``pie_against_full``: the first token after an edit near the top (at 5%) of a long prompt,
  the edit-consistent cache (``pie``) against recomputing (``full``).
"""
from __future__ import annotations

import statistics
import time

import torch


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def copy_bandwidth(device: torch.device, mib: int, reps: int = 10) -> float:
    """GB/s of a ``mib`` MiB copy on ``device`` (read + write counted), median of ``reps``."""
    src = torch.rand(mib * 2 ** 18, device=device)                    # float32: mib MiB
    dst = torch.empty_like(src)
    times = []
    for _ in range(reps + 2):
        sync(device)
        t0 = time.perf_counter()
        dst.copy_(src)
        sync(device)
        times.append(time.perf_counter() - t0)
    return 2 * src.numel() * 4 / statistics.median(times[2:]) / 1e9


def step_ms(forward, cached: int, rows: int, reps: int) -> dict:
    """Median ms of a ``rows``-row forward (a chain for one row, a random draft tree for
    more) after ``cached`` entries, argmax read back; and for the captured forward the
    median ms of its graph's replay alone (``replay_ms``, None where nothing is captured).
    ``forward``: a CompactLlama or CapturedLlama over a model on its device."""
    from inkling.cache.tree_mask import tree_mask
    w = forward.embed.weight
    kv = forward.new_buffers(w.dtype, w.device)
    kv.reserve(cached + 128)                     # no growth inside the timed steps
    kv.keys.normal_()
    kv.values.normal_()
    kv.length = cached
    with torch.inference_mode():
        embeds = forward.embed(torch.randint(3, 500, (1, rows), device=w.device))
    parents = [-1] + [max(-1, i - 1 - i % 3) for i in range(1, rows)]
    positions, mask = tree_mask(parents, cached, w.dtype)
    positions, mask = positions[None].to(w.device), mask[None, None].to(w.device)
    if rows == 1:
        mask = None
    times = []
    for _ in range(reps + 3):                    # 3 warm-ups: the eager run, the capture
        sync(w.device)
        t0 = time.perf_counter()
        logits = forward.forward(kv, embeds, positions, mask)
        int(logits[0, -1].argmax())
        times.append((time.perf_counter() - t0) * 1000)
        kv.length = cached
    steps = getattr(kv, "steps", {})
    graph = next((s.graph for s in steps.values() if s.graph is not None), None)
    return {"ms": statistics.median(times[3:]),
            "replay_ms": None if graph is None else _replay_ms(graph, reps)}


def _replay_ms(graph, reps: int) -> float:
    """Median ms of ``graph``'s replay, timed with CUDA events."""
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def compiled(forward):
    """``forward`` (a CapturedLlama made with ``graphs=False``) with its static step run
    by ``torch.compile(mode="reduce-overhead")`` (inductor's kernels in its own CUDA
    graphs), every static input marked as a fixed address."""
    fn = torch.compile(forward.static_step, mode="reduce-overhead", fullgraph=True)

    def run(step):
        if not getattr(step, "marked", False):
            for t in (step.keys, step.values, step.x, step.cos, step.sin, step.slots,
                      step.mask):
                torch._dynamo.mark_static_address(t)
            step.marked = True
        return fn(step)
    forward.step_fn = run
    return forward


def pie_against_full(runtime, tokens: int, reps: int = 3) -> dict:
    """Median ms to the first token after inserting two tokens near the top of a
    ``tokens``-token prompt (at 5%, as ``scale.py`` does: with the options' stale
    threshold, 0.95, an edit nearer the top is recomputed in both modes): ``pie`` (the
    kept keys re-rotated in place, the new tokens run) and ``full`` (everything after
    the edit computed again); what each did; and their ratio."""
    from inkling.cache.prompt_cache import PromptCache
    from inkling.completion.options import InklingOptions
    from inkling.models.corpus import stdlib_root
    text = "".join(p.read_text(encoding="utf-8") for p in sorted(stdlib_root().glob("*.py"))[:80])
    ids = runtime.encode(text)[:tokens]
    assert len(ids) == tokens, f"the text holds {len(ids)} tokens, {tokens} asked"
    out = {}
    for mode in ("full", "pie"):
        times = []
        for i in range(reps):
            cache = PromptCache(runtime, mode, InklingOptions().cache.stale_threshold)
            cache.sync(ids)
            at = tokens // 20 + i
            edited = ids[:at] + [ids[3], ids[4]] + ids[at:]
            sync(runtime.device)
            t0 = time.perf_counter()
            synced = cache.sync(edited)
            int(synced.logits.argmax())
            times.append((time.perf_counter() - t0) * 1000)
        out[f"{mode}_ms"] = statistics.median(times)
        out[f"{mode}_did"] = f"{synced.mode}: {synced.prefilled} prefilled, {synced.reused} kept"
    out["pie_over_full"] = out["pie_ms"] / out["full_ms"]
    return out
