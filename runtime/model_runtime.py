"""A loaded causal LM with its tokenizer and fill-in-the-middle format."""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import torch
from tokenizers import Tokenizer

from inkling.runtime.chunked_encoder import ChunkedEncoder
from inkling.runtime.compact_llama import CompactLlama
from inkling.runtime.errors import ModelError
from inkling.runtime.fim import FimFormat
from inkling.runtime.forward_choice import FORWARDS, ForwardChoice
from inkling.runtime.forwards import Forward
from inkling.runtime.int8_panels import PanelEmbedding
from inkling.runtime.model_size import Checkpoint
from inkling.runtime.native_llama import NativeLlama
from inkling.runtime.reference_forward import cache_keyword
from inkling.runtime.thread_choice import ThreadChoice

__all__ = ["FORWARDS", "Forward", "ForwardStats", "ModelRuntime", "cache_keyword"]


@dataclass
class ForwardStats:
    """Model forward passes and the time spent in them (model_ms in the replay)."""
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
    bos_id: int | None = None    # every prompt starts with it, where the tokenizer adds one
    stats: ForwardStats = field(default_factory=ForwardStats)
    encoder: ChunkedEncoder | None = field(default=None, repr=False)    # memoizes lines' ids
    attached: dict = field(default_factory=dict, repr=False)  # loaded once for the Engines
    # None: transformers' forward only, ``compact_refusal`` says why
    compact: CompactLlama | None = field(default=None, repr=False)
    compact_refusal: str = ""
    threads: ThreadChoice | None = field(default=None, repr=False)  # None: left as is (GPU)
    forwards: ForwardChoice | None = field(default=None, repr=False)  # shared by replace()
    checkpoint: Checkpoint | None = field(default=None, repr=False)  # None: not from a folder

    def __post_init__(self) -> None:
        if self.encoder is None:
            self.encoder = ChunkedEncoder.for_tokenizer(self.tokenizer)
        if self.forwards is None:
            self.forwards = ForwardChoice(self)

    @property
    def vocab_size(self) -> int:
        return int(self.model.config.vocab_size)

    @property
    def params(self) -> int:
        """The parameters as the checkpoint stores them (else as the model holds them)."""
        if self.checkpoint is not None:
            return self.checkpoint.params
        return sum(p.numel() for p in self.model.parameters())

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
        try:
            emb = self.model.get_input_embeddings()
        except (AttributeError, NotImplementedError):
            emb = None
        if not isinstance(emb, (torch.nn.Embedding, PanelEmbedding)):
            raise ModelError(f"model {self.path} does not expose its input embeddings; "
                             "the superposed decoder needs them (use branches)")
        return emb

    def forward_kind(self, forward: str = "auto") -> str:
        """Which forward a cache asking for ``forward`` runs (``ForwardChoice.kind``)."""
        return self.forwards.kind(forward)

    def auto_note(self) -> str:
        """Why model.forward auto does not run the native forward (``ForwardChoice.note``)."""
        return self.forwards.note()

    def native_forward(self) -> NativeLlama:
        """The native forward over this model, or ModelError naming why it cannot run."""
        return self.forwards.native_forward()

    def forward_for(self, forward: str = "auto") -> Forward:
        """The forward a cache asking for ``forward`` runs (``ForwardChoice.forward``)."""
        return self.forwards.forward(forward)

    @torch.inference_mode()
    def forward_embeds(self, fwd: Forward, embeds: torch.Tensor, past,
                       position_ids: torch.Tensor) -> torch.Tensor:
        """embeds [1, n, hidden] -> logits [1, n, vocab] (float32) by ``fwd``; ``past`` updated."""
        t0 = time.perf_counter()
        embeds = embeds.to(self.device, self.dtype)
        threads = self._threads_for(fwd, embeds.shape[1])
        logits = fwd.forward(past, embeds, position_ids).float()
        self._count(embeds.shape[1], threads, t0)
        return logits

    @torch.inference_mode()
    def forward(self, fwd: Forward, input_ids: torch.Tensor, past,
                position_ids: torch.Tensor | None = None,
                attention_mask: torch.Tensor | None = None, last_only: bool = False,
                keep_last: int = 0) -> torch.Tensor:
        """input_ids [1, n] -> logits [1, keep or n, vocab] (float32) by ``fwd``; ``past`` grows."""
        t0 = time.perf_counter()
        keep = 1 if last_only else keep_last
        ids = input_ids.to(self.device)
        threads = self._threads_for(fwd, ids.shape[1])
        if position_ids is None:
            position_ids = torch.arange(past.length, past.length + ids.shape[1],
                                        device=self.device)[None]
        logits = fwd.forward(past, fwd.embed(ids), position_ids, attention_mask, keep).float()
        self._count(ids.shape[1], threads, t0)
        return logits

    def _threads_for(self, fwd: Forward, rows: int) -> int | None:
        """Set torch's threads for ``rows`` rows by ``fwd``; the count where measured, else None."""
        choice = self.threads
        if choice is None:
            return None
        if fwd.picks_threads(rows):
            threads = choice.pick(rows)
            choice.use(threads)
            return threads
        choice.use(choice.fixed())
        return None

    def _count(self, rows: int, threads: int | None, t0: float) -> None:
        """Count a forward of ``rows`` rows begun at ``t0`` in the stats and the thread choice."""
        seconds = time.perf_counter() - t0
        self.stats.forwards += 1
        self.stats.tokens += rows
        self.stats.seconds += seconds
        if threads is not None:
            self.threads.record(rows, threads, seconds * 1000)

