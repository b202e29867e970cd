"""The compact forward's decoding steps as CUDA graphs, over static buffers.

On a GPU a step of a small model is bound by kernel launches and the Python between them,
not by its weights: a one-row step of the bundled model is about 200 launches. A CUDA
graph records them once and replays them in one call. A graph replays fixed addresses and
fixed shapes, so :class:`CapturedLlama` runs a step of ``n`` rows as a step of its bucket's
rows (:data:`BUCKETS`: 1, 4, 16, 64; the rows past ``n`` are padding) over inputs that
keep their addresses:

- the cache: :class:`CapturedBuffers` (``kv_buffers.py``'s layout, preallocated to its
  capacity); a step writes its entries at ``slots`` (``length`` .. ``length + bucket``)
  and attends over the whole capacity;
- the rows' embeddings, the rotary tables' rows at the rows' positions (one table for
  every position up to the capacity, from the model's own rotary module), the slots, and
  the additive mask [1, 1, groups * bucket, capacity]: ``-inf`` (``finfo.min``) past the
  cache and wherever the tree or the edit says so.

Everything an edit does to the cache (PIE's re-rotation, gathers, holes, kept paths) is an
in-place operation on the same buffers (``KVBuffers``), so the graphs stay valid; where the
buffers grow (doubling, rarely), a store's graphs are dropped and captured again. A
bucket's graph is captured on its second step in a store (the first runs eagerly and
warms up), so a store used for one step (a branch's gathered cache) never pays a capture.
Forwards of more than 64 rows (prompt chunks) run the compact forward over the same
buffers.

On the CPU nothing is captured: the same static step runs eagerly (the tests run it
there against the compact forward and transformers'). ``model.forward auto`` runs this
forward on a GPU; the CPU keeps the native one (``forward_choice.py``).
"""
from __future__ import annotations

import torch
from torch.nn import functional as F

from inkling.runtime.compact_llama import CompactLlama, _rms
from inkling.runtime.kv_buffers import CAPACITY_STEP, KVBuffers
from inkling.runtime.rotary import UNSUPPORTED_ROPE, rope_type

BUCKETS = (1, 4, 16, 64)                 # rows of a captured step; more run the compact forward


def refusal(model: torch.nn.Module) -> str | None:
    """Why the captured steps cannot run ``model`` (beyond the compact forward's own
    refusal), or None: rotary scaling whose frequencies change with the sequence's length
    (one table of positions cannot hold them)."""
    kind = rope_type(model.config)
    if kind in UNSUPPORTED_ROPE:
        return f"rotary scaling {kind!r}: {UNSUPPORTED_ROPE[kind]}"
    return None


def bucket_for(rows: int) -> int | None:
    """The smallest bucket that holds ``rows`` rows, or None (the compact forward)."""
    return next((b for b in BUCKETS if rows <= b), None)


class CapturedBuffers(KVBuffers):
    """Key / value buffers the captured forward writes, with each bucket's static step
    (its inputs, and on a GPU its graph) bound to their addresses."""

    def __init__(self, layers: int, kv_heads: int, head_dim: int, dtype: torch.dtype,
                 device: torch.device, capacity: int = CAPACITY_STEP):
        super().__init__(layers, kv_heads, head_dim, dtype, device, capacity)
        self.steps: dict[int, StaticStep] = {}

    def step(self, forward: "CapturedLlama", rows: int) -> "StaticStep":
        """The static step of ``rows`` (a bucket) over these buffers as they are now:
        made again where the buffers moved (grew) since it was made."""
        if any(s.keys is not self.keys for s in self.steps.values()):
            self.steps = {}                    # the buffers grew: no step holds the old ones
        step = self.steps.get(rows)
        if step is None:
            step = self.steps[rows] = StaticStep(forward, self, rows)
        return step


class StaticStep:
    """One bucket's fixed-address inputs and output over one store's buffers, and its
    CUDA graph once captured."""

    def __init__(self, forward: "CapturedLlama", kv: KVBuffers, rows: int):
        dtype, device, cap = kv.keys.dtype, kv.keys.device, kv.capacity
        self.forward, self.rows = forward, rows
        self.keys, self.values = kv.keys, kv.values                   # [L, 1, kv, cap, d]
        self.x = torch.zeros(rows, forward.config.hidden_size, dtype=dtype, device=device)
        self.cos = torch.zeros(1, 1, rows, forward.head_dim, dtype=dtype, device=device)
        self.sin = torch.zeros_like(self.cos)                          # [1, 1, rows, d]
        self.slots = torch.zeros(rows, dtype=torch.long, device=device)
        self.mask = torch.zeros(1, 1, forward.groups * rows, cap, dtype=dtype, device=device)
        self.visible: int | None = None     # one row, causal: the columns it sees, else None
        self.logits: torch.Tensor | None = None                        # [rows, vocab]
        self.graph = None
        self.runs = 0

    def run(self) -> torch.Tensor:
        """The step over the inputs as they are now: logits [rows, vocab] (static: read
        them before the next run). Eager on its first run (the warm-up); on a GPU the
        second captures the graph, and later ones replay it."""
        self.runs += 1
        if self.graph is not None:
            self.graph.replay()
        elif self.runs >= 2 and self.keys.is_cuda and self.forward.graphs:
            self.graph = self._capture()
            self.graph.replay()
        else:
            self.logits = self.forward.step_fn(self)
        return self.logits

    def _capture(self):
        """The CUDA graph of this step (a warm-up on a side stream first, as PyTorch
        asks: the capture itself runs nothing)."""
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            self.forward.step_fn(self)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            self.logits = self.forward.step_fn(self)
        return graph


class CapturedLlama(CompactLlama):
    """``forward(kv, embeds, positions, mask, keep)`` -> logits, as
    :meth:`CompactLlama.forward`, with steps of up to 64 rows run as static steps (CUDA
    graphs on a GPU). ``graphs`` False: the static steps run eagerly on a GPU too (the
    benchmarks' comparison); ``step_fn`` is the step that runs or is captured (the
    benchmarks put ``torch.compile``'s in its place)."""

    name = "captured"

    def __init__(self, model: torch.nn.Module, graphs: bool = True):
        super().__init__(model)
        why = refusal(model)
        if why is not None:
            raise ValueError(f"{type(model).__name__}: no captured forward: {why}")
        self.graphs = graphs
        self.step_fn = self.static_step
        self._rows: torch.Tensor | None = None                          # [64]: 0 .. 63

    def new_buffers(self, dtype: torch.dtype, device: torch.device) -> CapturedBuffers:
        return CapturedBuffers.for_config(self.config, dtype, device)

    @torch.inference_mode()
    def forward(self, kv: KVBuffers, embeds: torch.Tensor, positions: torch.Tensor,
                mask: torch.Tensor | None = None, keep: int = 0) -> torch.Tensor:
        """embeds [1, n, hidden] after the ``kv.length`` cached entries at ``positions``
        [1, n]; ``mask`` None (causal) or [1, 1, n, length + n] (additive float or bool)
        -> logits [1, keep or n, vocab] (a copy); the new entries appended to ``kv``."""
        n, past = embeds.shape[1], kv.length
        rows = bucket_for(n)
        if rows is None or not hasattr(kv, "step"):        # not a CapturedBuffers: no steps
            return super().forward(kv, embeds, positions, mask, keep)
        kv.reserve(rows)                                  # the padding rows write there too
        step = kv.step(self, rows)
        self._load(step, embeds[0], positions[0].to(embeds.device), mask, past)
        logits = step.run()                                                # [rows, vocab]
        kv.length = past + n
        return logits[n - (keep or n):n].clone()[None]                    # [1, keep, vocab]

    def _load(self, step: StaticStep, x: torch.Tensor, positions: torch.Tensor,
              mask: torch.Tensor | None, past: int) -> None:
        """Copy one forward's rows into ``step``'s inputs: x [n, hidden], positions [n].
        Padding rows keep what they held (finite: earlier rows or zeros)."""
        n = x.shape[0]
        step.x[:n].copy_(x)
        self._rope_rows(positions, step.keys.shape[3], step, n)
        torch.add(self._arange(step.rows, x.device), past, out=step.slots)
        self._mask(step, mask, n, past)

    def _mask(self, step: StaticStep, mask: torch.Tensor | None, n: int, past: int) -> None:
        """``step.mask`` for this forward: each real row sees what ``mask`` says (None:
        the cache and the rows up to itself), nothing past ``past + n``; padding row i
        sees the cache and the rows up to itself (so it stays finite). A one-row causal
        step after another moves one edge of the mask instead of writing it whole."""
        minus = torch.finfo(step.mask.dtype).min
        end = past + 1
        if mask is None and n == 1 and step.visible is not None:
            if step.visible < end:
                step.mask[..., step.visible:end] = 0
            elif step.visible > end:
                step.mask[..., end:step.visible] = minus
            step.visible = end
            return
        cap, device = step.mask.shape[-1], step.mask.device
        rows = self._arange(step.rows, device) + past                        # [rows]
        sees = self._arange(cap, device)[None, :] <= rows[:, None]          # [rows, cap]
        base = torch.zeros(sees.shape, dtype=step.mask.dtype, device=device)
        base.masked_fill_(~sees, minus)
        if mask is not None:
            m = mask[0, 0]                                                   # [n, past + n]
            base[:n, :past + n] = m if m.dtype != torch.bool else \
                torch.zeros_like(base[:n, :past + n]).masked_fill_(~m, minus)
        step.mask.view(self.groups, step.rows, cap).copy_(base.expand(self.groups, -1, -1))
        step.visible = end if mask is None and step.rows == 1 else None

    def _rope_rows(self, positions: torch.Tensor, capacity: int, step: StaticStep,
                   n: int) -> None:
        """The rotary tables' rows at ``positions`` [n] into ``step.cos`` / ``step.sin``'s
        first ``n`` rows (sin's first half negated, as ``signed_rope`` gives it); the tables
        cover every position up to the capacity, from the model's rotary module (row for
        row what it computes)."""
        table = self.rope_table                       # static: refusal() holds the rest
        table.ensure(capacity, positions.device)
        torch.index_select(table.cos, 0, positions, out=step.cos[0, 0, :n])     # [n, d]
        torch.index_select(table.sin, 0, positions, out=step.sin[0, 0, :n])

    def _arange(self, n: int, device: torch.device) -> torch.Tensor:
        """0 .. n - 1 on ``device``: for a bucket's rows a slice of one kept tensor (no
        launch a step)."""
        if n > BUCKETS[-1]:
            return torch.arange(n, device=device)
        if self._rows is None or self._rows.device != device:
            self._rows = torch.arange(BUCKETS[-1], device=device)
        return self._rows[:n]

    def static_step(self, step: StaticStep) -> torch.Tensor:
        """The forward of ``step.rows`` rows over ``step``'s inputs, every shape fixed:
        logits [rows, vocab] (the model's dtype). The compact forward's arithmetic,
        attention over the whole capacity under ``step.mask``."""
        x, rope, slots, mask = step.x, (step.cos, step.sin), step.slots, step.mask
        for i, layer in enumerate(self.layers):
            store = (step.keys[i], step.values[i])                        # [1, kv, cap, d]
            x = x + self._static_attention(layer, _rms(layer.in_norm, x), rope, store,
                                           (slots, mask))
            h = _rms(layer.post_norm, x)
            x = x + layer.down(F.silu(layer.gate(h)) * layer.up(h))
        return self.head(_rms(self.norm, x))                             # [rows, vocab]

    def _static_attention(self, layer, x: torch.Tensor, rope, store, where) -> torch.Tensor:
        """x [b, hidden] -> the attention block's output [b, hidden]; the layer's new keys
        and values written into ``store`` at ``slots`` [b]; ``mask`` [1, 1, g * b, cap]."""
        (cos, sin), (slots, mask), b = rope, where, x.shape[0]
        q = layer.q(x).view(1, b, -1, self.head_dim).transpose(1, 2)      # [1, H, b, d]
        k = layer.k(x).view(1, b, -1, self.head_dim).transpose(1, 2)      # [1, kv, b, d]
        v = layer.v(x).view(1, b, -1, self.head_dim).transpose(1, 2)
        half = self.head_dim // 2
        q = q * cos + q.roll(half, -1) * sin
        k = k * cos + k.roll(half, -1) * sin
        store[0].index_copy_(2, slots, k)
        store[1].index_copy_(2, slots, v)
        packed = q.reshape(1, self.kv_heads, self.groups * b, self.head_dim)
        out = F.scaled_dot_product_attention(packed, store[0], store[1], attn_mask=mask,
                                             scale=self.scaling)         # [1, kv, g * b, d]
        out = out.reshape(1, self.heads, b, self.head_dim).transpose(1, 2).contiguous()
        return layer.o(out.view(b, -1))
