"""The compact forward's decoding steps as CUDA graphs, over static buffers.
A graph replays a GPU step's launches in one call but needs fixed shapes and addresses: n rows run
padded to a bucket over static inputs, cache edits in place (docs/decisions/forward-choice.md)."""
from __future__ import annotations

import torch
from torch.nn import functional as F

from inkling.runtime.compact_llama import CompactLlama, _rms
from inkling.runtime.kv_buffers import CAPACITY_STEP, KVBuffers
from inkling.runtime.rotary import UNSUPPORTED_ROPE, rope_type

BUCKETS = (1, 4, 16, 64)                 # rows of a captured step; more run the compact forward


def refusal(model: torch.nn.Module) -> str | None:
    """Why the captured steps cannot run ``model`` (length-varying rotary frequencies), or None."""
    kind = rope_type(model.config)
    if kind in UNSUPPORTED_ROPE:
        return f"rotary scaling {kind!r}: {UNSUPPORTED_ROPE[kind]}"
    return None


def bucket_for(rows: int) -> int | None:
    """The smallest bucket that holds ``rows`` rows, or None (the compact forward)."""
    return next((b for b in BUCKETS if rows <= b), None)


class CapturedBuffers(KVBuffers):
    """KVBuffers with each bucket's static step (its inputs, on a GPU its graph) bound to them."""

    def __init__(self, layers: int, kv_heads: int, head_dim: int, dtype: torch.dtype,
                 device: torch.device, capacity: int = CAPACITY_STEP):
        super().__init__(layers, kv_heads, head_dim, dtype, device, capacity)
        self.steps: dict[int, StaticStep] = {}

    def step(self, forward: "CapturedLlama", rows: int) -> "StaticStep":
        """The static step of ``rows`` over these buffers, made anew where they grew."""
        if any(s.keys is not self.keys for s in self.steps.values()):
            self.steps = {}                    # the buffers grew: no step holds the old ones
        step = self.steps.get(rows)
        if step is None:
            step = self.steps[rows] = StaticStep(forward, self, rows)
        return step


class StaticStep:
    """One bucket's fixed-address inputs and output over one store's buffers, and its CUDA graph."""

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
        """Logits [rows, vocab] (static): eager, then on a GPU captured on run two and replayed."""
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
        """The CUDA graph of this step, after a warm-up on a side stream as PyTorch asks."""
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
    """CompactLlama with steps of up to 64 rows run static (``graphs`` False: eager on GPUs too)."""

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
        """As :meth:`CompactLlama.forward`; the logits are a copy (the step's are static)."""
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
        """Copy x [n, hidden] and positions [n] into ``step``'s inputs; padding stays finite."""
        n = x.shape[0]
        step.x[:n].copy_(x)
        self._rope_rows(positions, step.keys.shape[3], step, n)
        torch.add(self._arange(step.rows, x.device), past, out=step.slots)
        self._mask(step, mask, n, past)

    def _mask(self, step: StaticStep, mask: torch.Tensor | None, n: int, past: int) -> None:
        """Set ``step.mask``: real rows as ``mask`` says (None: causal), padding rows causal."""
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
        """The rotary table's rows at ``positions`` [n] into ``step.cos`` / ``step.sin``."""
        table = self.rope_table                       # static: refusal() holds the rest
        table.ensure(capacity, positions.device)
        torch.index_select(table.cos, 0, positions, out=step.cos[0, 0, :n])     # [n, d]
        torch.index_select(table.sin, 0, positions, out=step.sin[0, 0, :n])

    def _arange(self, n: int, device: torch.device) -> torch.Tensor:
        """0 .. n - 1 on ``device``: for a bucket a slice of one kept tensor (no launch)."""
        if n > BUCKETS[-1]:
            return torch.arange(n, device=device)
        if self._rows is None or self._rows.device != device:
            self._rows = torch.arange(BUCKETS[-1], device=device)
        return self._rows[:n]

    def static_step(self, step: StaticStep) -> torch.Tensor:
        """The forward of ``step.rows`` rows over ``step``'s inputs: logits [rows, vocab]."""
        x, rope, slots, mask = step.x, (step.cos, step.sin), step.slots, step.mask
        for i, layer in enumerate(self.layers):
            store = (step.keys[i], step.values[i])                        # [1, kv, cap, d]
            x = x + self._static_attention(layer, _rms(layer.in_norm, x), rope, store,
                                           (slots, mask))
            h = _rms(layer.post_norm, x)
            x = x + layer.down(F.silu(layer.gate(h)) * layer.up(h))
        return self.head(_rms(self.norm, x))                             # [rows, vocab]

    def _static_attention(self, layer, x: torch.Tensor, rope, store, where) -> torch.Tensor:
        """x [b, hidden] -> [b, hidden]; new keys / values into ``store`` at ``slots``."""
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
