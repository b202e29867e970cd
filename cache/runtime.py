"""A loaded causal LM with its tokenizer and fill-in-the-middle format."""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import torch
from tokenizers import Tokenizer

from .chunked_encoder import ChunkedEncoder
from .fim import FimFormat


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
    # the ids of unchanged lines are remembered: between keystrokes only the line
    # that changed is tokenized again (the same ids as tokenizing the text whole)
    encoder: ChunkedEncoder | None = field(default=None, repr=False)
    # what is derived from this model and loaded once for every Engine that shares it
    # (its model datastore, by file)
    attached: dict = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if self.encoder is None:
            self.encoder = ChunkedEncoder.for_tokenizer(self.tokenizer)

    @property
    def vocab_size(self) -> int:
        return int(self.model.config.vocab_size)

    def encode(self, text: str) -> list[int]:
        return self.encoder.encode(text)

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
                attention_mask: torch.Tensor | None = None, last_only: bool = False,
                keep_last: int = 0) -> torch.Tensor:
        """input_ids: [1, n] -> logits [1, n, vocab] (float32), or [1, 1, vocab] with
        ``last_only`` (the output layer then runs on the last position only), or
        [1, keep_last, vocab] for the last ``keep_last`` positions; ``past`` is updated
        in place."""
        t0 = time.perf_counter()
        out = self.model(input_ids=input_ids.to(self.device), past_key_values=past,
                         position_ids=position_ids, attention_mask=attention_mask, use_cache=True,
                         logits_to_keep=1 if last_only else keep_last)
        logits = out.logits.float()
        self.stats.forwards += 1
        self.stats.tokens += input_ids.shape[1]
        self.stats.seconds += time.perf_counter() - t0
        return logits
