"""Weights held as the native layers' int8 panels and nothing else (``model.weights int8``).
Each projection, the embedding and the output layer are quantized per output channel as they
are read, a few thousand rows at a time, straight into the panel layout of
``native/llama_step.cpp``'s ``pack_int8_panels``, so no float copy of a weight ever exists
whole; the model keeps meta tensors in their place, and only the native forward runs it
(docs/decisions/lean-weights.md); ``weights_choice.py`` decides where."""
from __future__ import annotations

from typing import Callable

import torch

from inkling.runtime.checkpoint_reader import read_tensor, stored_rows
from inkling.runtime.errors import ModelError
from inkling.runtime.int8_weights import INT8_SUFFIX, SCALE_SUFFIX, quantize_rows, read_pair

TILE = 16                 # the panels' columns: two vectors of eight floats
SCALE_ROWS = 4            # a strip's TILE float32 scales, as rows of TILE bytes
CHUNK_ROWS = 4096         # rows quantized at a time: the float copy a read holds
# the weights held as panels: every projection, the embedding, the output layer
PANEL_NAMES = ("_proj.weight", "embed_tokens.weight", "lm_head.weight")
EMBEDDING, HEAD = "model.embed_tokens.weight", "lm_head.weight"
LEAN_ONLY = ("model.weights int8 keeps no float weights: only the native forward runs it "
             "(model.weights float for the compact or reference forward)")

Rows = Callable[[int, int], torch.Tensor]      # (first, end) -> the weight's rows [m, in]


def is_panelled(name: str, shape: tuple[int, ...]) -> bool:
    """Whether the weight ``name`` of ``shape`` is held as panels."""
    return len(shape) == 2 and name.endswith(PANEL_NAMES)


def empty_panels(out: int, inputs: int) -> torch.Tensor:
    """Zeroed panels for a weight [out, in]: [ceil(out / TILE), in + SCALE_ROWS, TILE] int8."""
    return torch.zeros(((out + TILE - 1) // TILE, inputs + SCALE_ROWS, TILE), dtype=torch.int8)


def write_rows(panels: torch.Tensor, first: int, q: torch.Tensor, scale: torch.Tensor) -> None:
    """Rows ``first`` .. of a weight (int8 q [m, in], float32 scale [m]) into ``panels``;
    ``first`` a multiple of TILE. panels[s, i, c] = q[s * TILE + c, i]; a strip's scales are
    the bytes of its last SCALE_ROWS rows."""
    m, inputs = q.shape
    pad = -m % TILE
    if pad:                                                   # the last strip: zeros past out
        q = torch.nn.functional.pad(q, (0, 0, 0, pad))
        scale = torch.nn.functional.pad(scale, (0, pad))
    s0, strips = first // TILE, (m + pad) // TILE
    panels[s0:s0 + strips, :inputs] = q.view(strips, TILE, inputs).transpose(1, 2)
    panels[s0:s0 + strips, inputs:] = scale.to(torch.float32).contiguous() \
        .view(torch.int8).view(strips, SCALE_ROWS, TILE)


def quantized_panels(rows: Rows, out: int, inputs: int) -> torch.Tensor:
    """The panels of a float weight [out, in] read ``CHUNK_ROWS`` rows at a time by ``rows``,
    each row quantized over its largest magnitude (``int8_weights.quantize_rows``)."""
    panels = empty_panels(out, inputs)
    for first in range(0, out, CHUNK_ROWS):
        q, scale = quantize_rows(rows(first, min(out, first + CHUNK_ROWS)))
        write_rows(panels, first, q, scale)
    return panels


def int8_panels(q: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """The panels of an int8 weight q [out, in] with its per-row float32 scale [out]."""
    panels = empty_panels(*q.shape)
    write_rows(panels, 0, q, scale)
    return panels


def panel_scales(panels: torch.Tensor, out: int) -> torch.Tensor:
    """The per-row scales [out] float32 that ``panels`` carry."""
    inputs = panels.shape[1] - SCALE_ROWS
    return panels[:, inputs:].contiguous().view(torch.float32).reshape(-1)[:out]


class PanelEmbedding(torch.nn.Module):
    """The token embedding gathered from int8 panels: row t is panels[t // 16, :, t % 16]
    times its scale. A tied model's output layer and embedding share the one set of panels."""

    def __init__(self, panels: torch.Tensor, vocab: int, dtype: torch.dtype):
        super().__init__()
        self.panels = panels                                  # [vocab / 16, hidden + 4, 16]
        self.num_embeddings = vocab
        self.embedding_dim = panels.shape[1] - SCALE_ROWS
        self.scales = panel_scales(panels, vocab)                 # [vocab]
        self.dtype = dtype

    def forward(self, ids: torch.Tensor) -> torch.Tensor:        # [...] -> [..., hidden]
        flat = ids.reshape(-1).to(torch.long)
        rows = self.panels[flat // TILE, :self.embedding_dim, flat % TILE]     # [N, hidden]
        out = rows.to(torch.float32) * self.scales[flat][:, None]
        return out.to(self.dtype).view(*ids.shape, self.embedding_dim)


def take_float(panels: dict[str, torch.Tensor], cached: dict[str, torch.Tensor] | None = None):
    """The lean reader's ``take`` for a float folder: each panelled weight quantized into
    ``panels`` by rows as it is read (or taken from ``cached``, the panels kept on disk, where
    they are there in its shape), a meta tensor in its place; the rest as stored."""

    def take(tensors: dict, key: str) -> tuple[str, torch.Tensor]:
        rows, shape = stored_rows(tensors, key)
        if not is_panelled(key, shape):
            return key, read_tensor(tensors, key)
        panels[key] = kept_or_quantized(key, rows, shape, cached or {})
        return key, torch.empty(shape, device="meta")
    return take


def kept_or_quantized(name: str, rows: Rows, shape: tuple[int, int],
                      cached: dict[str, torch.Tensor]) -> torch.Tensor:
    """``cached``'s panels of weight ``name`` [out, in] where they fit it, else quantized from
    ``rows``."""
    kept = cached.get(name)
    out, inputs = shape
    if kept is not None and kept.dtype == torch.int8 and \
            tuple(kept.shape) == ((out + TILE - 1) // TILE, inputs + SCALE_ROWS, TILE):
        return kept
    return quantized_panels(rows, out, inputs)


def take_int8(panels: dict[str, torch.Tensor]):
    """The lean reader's ``take`` for an int8 folder: NAME.int8 and NAME.scale made into
    NAME's panels as they are, a meta tensor in its place; a scale is read with its weight."""
    def take(tensors: dict, key: str) -> tuple[str, torch.Tensor] | None:
        if key.endswith(SCALE_SUFFIX):
            return None
        if not key.endswith(INT8_SUFFIX):
            return key, read_tensor(tensors, key)
        name, q, scale = read_pair(tensors, key)
        panels[name] = int8_panels(q, scale)
        return name, torch.empty(tuple(q.shape), device="meta")
    return take


def install(model: torch.nn.Module, panels: dict[str, torch.Tensor]) -> None:
    """Keep ``panels`` on ``model`` (``inkling_panels``, name -> panels) and put the embedding
    that reads them in place of its meta one; ModelError where the embedding or head is none."""
    table = panels.get(EMBEDDING)
    if table is None or (HEAD not in panels and not _tied(model)):
        raise ModelError(f"model {model.config._name_or_path}: int8 weights need the embedding "
                         "and output layer as projections")
    model.inkling_panels = panels
    dtype = model.model.norm.weight.dtype
    model.model.embed_tokens = PanelEmbedding(table, int(model.config.vocab_size), dtype)


def head_panels(model: torch.nn.Module) -> torch.Tensor:
    """The output layer's panels: its own, or the embedding's where they are tied."""
    panels = model.inkling_panels
    return panels.get(HEAD, panels[EMBEDDING])


def is_lean(model: torch.nn.Module) -> bool:
    """Whether ``model`` holds its weights as int8 panels only."""
    return getattr(model, "inkling_panels", None) is not None


def _tied(model: torch.nn.Module) -> bool:
    return bool(getattr(model.config, "tie_word_embeddings", False))
