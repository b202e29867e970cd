"""A loaded causal LM with its tokenizer and fill-in-the-middle format."""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import torch
from tokenizers import Tokenizer

from .fim import FimFormat


ENCODE_MEMO_MIN_CHARS = 256
ENCODE_MEMO_SIZE = 32


@dataclass
class ForwardStats:
    """Model forward passes and the time spent in them (for model_ms in the replay)."""
    forwards: int = 0
    tokens: int = 0
    seconds: float = 0.0


@dataclass
class ModelRuntime:
    path: Path
    model: torch.nn.Module
    tokenizer: Tokenizer
    fim: FimFormat | None
    fim_order: str
    stop_ids: frozenset[int]
    context_limit: int
    device: torch.device
    dtype: torch.dtype
    stats: ForwardStats = field(default_factory=ForwardStats)
    # masked forwards of fewer rows than this are padded up to it (0: never): on CPU,
    # matrix products of 2 to 7 rows take a slower kernel than 8 rows do
    row_bucket: int = 0
    # recent long texts and their ids: prompt windows that did not change between
    # keystrokes (the suffix while one types) are not tokenized again
    _encoded: dict[str, tuple[int, ...]] = field(default_factory=dict, repr=False)

    @property
    def vocab_size(self) -> int:
        return int(self.model.config.vocab_size)

    def encode(self, text: str) -> list[int]:
        if len(text) < ENCODE_MEMO_MIN_CHARS:
            return self.tokenizer.encode(text, add_special_tokens=False).ids if text else []
        ids = self._encoded.get(text)
        if ids is None:
            ids = tuple(self.tokenizer.encode(text, add_special_tokens=False).ids)
            if len(self._encoded) >= ENCODE_MEMO_SIZE:
                self._encoded.clear()            # plain dict operations: safe across threads
            self._encoded[text] = ids
        return list(ids)

    def encode_batch(self, texts: list[str]) -> list[list[int]]:
        """Many texts at once (the tokenizer works on them in parallel)."""
        return [e.ids for e in self.tokenizer.encode_batch(texts, add_special_tokens=False)]

    def decode(self, ids: list[int]) -> str:
        return self.tokenizer.decode(ids, skip_special_tokens=False)

    def token_id(self, token: str) -> int:
        tid = self.tokenizer.token_to_id(token)
        if tid is None:
            raise KeyError(token)
        return tid

    def input_embeddings(self) -> torch.nn.Module:
        """The token embedding table (the superposed decoder mixes its rows)."""
        from .errors import ModelError
        try:
            emb = self.model.get_input_embeddings()
        except (AttributeError, NotImplementedError):
            emb = None
        if not isinstance(emb, torch.nn.Embedding):
            raise ModelError(f"model {self.path} does not expose its input embeddings; "
                             "the superposed decoder needs them (use branches)")
        return emb

    @torch.inference_mode()
    def forward_embeds(self, embeds: torch.Tensor, past, position_ids: torch.Tensor) -> torch.Tensor:
        """embeds: [1, n, hidden] -> logits [1, n, vocab] (float32); ``past`` is updated."""
        t0 = time.perf_counter()
        out = self.model(inputs_embeds=embeds.to(self.device, self.dtype), past_key_values=past,
                         position_ids=position_ids, use_cache=True)
        self.stats.forwards += 1
        self.stats.tokens += embeds.shape[1]
        self.stats.seconds += time.perf_counter() - t0
        return out.logits.float()

    @torch.inference_mode()
    def forward(self, input_ids: torch.Tensor, past, position_ids: torch.Tensor | None = None,
                attention_mask: torch.Tensor | None = None, last_only: bool = False
                ) -> torch.Tensor:
        """input_ids: [1, n] -> logits [1, n, vocab] (float32), or [1, 1, vocab] with
        ``last_only`` (the output layer then runs on the last position only); ``past``
        is updated in place. ``attention_mask``: None (causal) or additive [1, 1, n, past + n]."""
        t0 = time.perf_counter()
        n = input_ids.shape[1]
        pad = self.row_bucket - n if 1 < n < self.row_bucket else 0
        cached = past.get_seq_length() if pad else 0
        if pad:
            input_ids, position_ids, attention_mask = _pad_rows(
                input_ids, position_ids, attention_mask, pad, cached)
        keep = torch.tensor([n - 1]) if last_only else 0      # the last real row
        out = self.model(input_ids=input_ids.to(self.device), past_key_values=past,
                         position_ids=None if position_ids is None else position_ids.to(self.device),
                         attention_mask=None if attention_mask is None
                         else attention_mask.to(self.device),
                         use_cache=True, logits_to_keep=keep)
        if pad:
            for layer in past.layers:          # keys, values: [b, kv_heads, seq, d]; padding off
                layer.keys = layer.keys[..., :cached + n, :]
                layer.values = layer.values[..., :cached + n, :]
        logits = out.logits.float()
        if pad and not last_only:
            logits = logits[:, :n]
        self.stats.forwards += 1
        self.stats.tokens += n
        self.stats.seconds += time.perf_counter() - t0
        return logits


def _pad_rows(input_ids: torch.Tensor, position_ids: torch.Tensor | None,
              mask: torch.Tensor | None, pad: int, cached: int):
    """``pad`` rows after the n real ones (the last token again, at the next positions).
    Causally they come after every real row, so no real row sees them; with a mask
    [1, 1, n, cached + n] the real rows get masked columns for them and each padding row
    sees only itself. Returns (input_ids [1, n + pad], position_ids, mask)."""
    n = input_ids.shape[1]
    ids = torch.cat([input_ids, input_ids[:, -1:].expand(1, pad)], dim=1)
    if position_ids is None:
        position_ids = torch.arange(cached, cached + n)[None]
    last = position_ids[:, -1:]
    pos = torch.cat([position_ids, last + torch.arange(1, pad + 1, device=last.device)[None]], 1)
    if mask is None:
        return ids, pos, None
    lo = torch.finfo(mask.dtype).min
    full = torch.full((1, 1, n + pad, cached + n + pad), lo, dtype=mask.dtype, device=mask.device)
    full[..., :n, :cached + n] = mask
    idx = torch.arange(n, n + pad)
    full[0, 0, idx, cached + idx] = 0
    return ids, pos, full
