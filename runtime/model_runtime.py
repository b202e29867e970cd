"""A loaded causal LM with its tokenizer and fill-in-the-middle format."""
from __future__ import annotations

import inspect
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch
from tokenizers import Tokenizer

from inkling.runtime.chunked_encoder import ChunkedEncoder
from inkling.runtime.fim import FimFormat
from inkling.runtime.captured_llama import CapturedBuffers, CapturedLlama
from inkling.runtime.kv_buffers import KVBuffers
from inkling.runtime.native_llama import NativeBuffers, NativeLlama
from inkling.runtime.thread_choice import ThreadChoice

FORWARDS = ("auto", "native", "compact", "captured", "reference")
# why model.forward auto runs the captured forward on a GPU (inkling/stats shows it)
CAPTURED_NOTE = ("on a GPU: the compact forward's steps of up to 64 rows replayed as CUDA "
                 "graphs (a step there is bound by its launches; the native layers are CPU "
                 "code)")


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
    # the compact forward over the same weights (runtime/compact_llama.py), or None with
    # the reason in ``compact_refusal``: the model then runs transformers' forward only
    compact: object | None = field(default=None, repr=False)
    compact_refusal: str = ""
    # the compact forward with its layers in C++ (runtime/native_llama.py), made at load by
    # the loader for model.forward auto or native, else on first request (compiling the
    # extension takes about 30 s once per machine, in the background for auto: see
    # _unbuilt; loading it 0.1 s); _native holds it or the reason it cannot run, under
    # _native_lock
    _native: object | None = field(default=None, repr=False)
    _native_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    # why auto is not native ("" where it is; set once, by whichever thread asks first:
    # the same value from any); _native_pending: because the module was not built yet
    _auto_refusal: str | None = field(default=None, repr=False)
    _native_pending: bool = field(default=False, repr=False)
    # the CPU threads of each forward (runtime/thread_choice.py), set by the loader; None:
    # torch's count is left as it is (a GPU)
    threads: ThreadChoice | None = field(default=None, repr=False)
    # the compact forward's steps as CUDA graphs (runtime/captured_llama.py), made on first
    # request: what model.forward auto runs on a GPU
    _captured: object | None = field(default=None, repr=False)

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
        from inkling.runtime.errors import ModelError
        try:
            emb = self.model.get_input_embeddings()
        except (AttributeError, NotImplementedError):
            emb = None
        if not isinstance(emb, torch.nn.Embedding):
            raise ModelError(f"model {self.path} does not expose its input embeddings; "
                             "the superposed decoder needs them (use branches)")
        return emb

    def forward_kind(self, forward: str = "auto") -> str:
        """``native``, ``compact``, ``captured`` or ``reference``: which forward a cache
        asking for ``forward`` (auto | native | compact | captured | reference) runs.
        ``auto`` is the fastest that runs here: on a GPU captured (``auto_note`` says why),
        on the CPU native, else compact (``auto_note`` says why not native; the loader
        logs it), else transformers' own. Asking for ``native`` or ``compact`` on a
        model without one is an error naming the reason."""
        if forward not in FORWARDS:
            raise ValueError(f"model.forward must be one of {', '.join(FORWARDS)}, "
                             f"got {forward!r}")
        # a model swapped in after loading (benchmarks, tests) has no compact twin
        usable = self.compact is not None and self.compact.model is self.model
        if forward in ("compact", "native", "captured") and not usable:
            from inkling.runtime.errors import ModelError
            why = self.compact_refusal or "the model was replaced after loading"
            raise ModelError(f"model {self.path} has no {forward} forward ({why}); "
                             "use model.forward auto or reference")
        if forward == "captured" or (forward == "auto" and usable and
                                     self.device.type == "cuda" and not self._uncaptured()):
            return "captured"
        if forward == "native":
            self.native_forward()
            return "native"
        if forward == "auto" and usable and self._auto_native() is not None:
            return "native"
        return "compact" if usable and forward != "reference" else "reference"

    def auto_note(self) -> str:
        """Why ``model.forward auto`` does not run the native forward here ("" when it
        does, or has not been asked yet)."""
        if self.compact is None or self.compact.model is not self.model:
            return f"no compact forward: {self.compact_refusal or 'the model was replaced'}"
        if self.device.type == "cuda":
            why = self._uncaptured()
            return f"no captured forward: {why}" if why else CAPTURED_NOTE
        return self._auto_refusal or (self._native if isinstance(self._native, str) else "")

    def build_failed(self) -> bool:
        """Whether the native forward was tried here and did not build or load."""
        return isinstance(self._native, str)

    def build_pending(self) -> bool:
        """Whether auto runs the compact forward because the native module was not built
        when it was chosen (a build then runs in the background, for the next start)."""
        return self._native_pending

    def _auto_native(self):
        """The native forward when model.forward auto chooses it, or None with the reason
        in ``auto_note``. Chosen once: the forward stays for the life of the runtime."""
        from inkling.runtime.native_llama import refusal
        if self._auto_refusal is None:
            self._auto_refusal = refusal(self.model, auto=True) or self._unbuilt()
        return None if self._auto_refusal else self._try_native()

    def _unbuilt(self) -> str:
        """"" where the native module is loaded or built (auto then loads it); else why
        not: not built yet (a build started in the background; auto does not wait for a
        compile), or the failure of the last build (kept as ``_native``)."""
        from inkling.runtime.native_llama import NativePending, NativeUnavailable, load_extension
        try:
            load_extension(wait=False)
        except NativePending as exc:
            self._native_pending = True
            return str(exc)
        except NativeUnavailable as exc:
            with self._native_lock:
                self._native = self._native or str(exc)
        return ""

    def _try_native(self):
        """The native forward, built on the first call, or None (the reason kept)."""
        from inkling.runtime.native_llama import NativeLlama, NativeUnavailable
        with self._native_lock:
            if self._native is None:
                try:
                    self._native = NativeLlama(self.model)
                except NativeUnavailable as exc:
                    self._native = str(exc)
            return None if isinstance(self._native, str) else self._native

    def native_forward(self):
        """The native forward over this model (built on the first call); raises
        ModelError naming why it cannot run here (a GPU, float16, a failed build)."""
        from inkling.runtime.errors import ModelError
        native = self._try_native()
        if native is None:
            raise ModelError(f"model {self.path}: {self._native}; "
                             "use model.forward auto, compact or reference")
        return native

    def new_kv(self, forward: str = "auto"):
        """An empty key/value store for one document: preallocated buffers for the
        compact forward, a transformers ``DynamicCache`` for the reference one. The
        store's type decides which forward ``forward`` runs."""
        kind = self.forward_kind(forward)
        if kind == "native":
            return self.native_forward().new_buffers(self.dtype, self.device)
        if kind == "compact":
            return self.compact.new_buffers(self.dtype, self.device)
        if kind == "captured":
            return self.captured_forward().new_buffers(self.dtype, self.device)
        from inkling.runtime.dynamic_kv import DynamicKV
        return DynamicKV(self.model.config)

    @torch.inference_mode()
    def forward_embeds(self, embeds: torch.Tensor, past, position_ids: torch.Tensor) -> torch.Tensor:
        """embeds: [1, n, hidden] -> logits [1, n, vocab] (float32); ``past`` is updated."""
        t0 = time.perf_counter()
        embeds = embeds.to(self.device, self.dtype)
        threads = self._threads_for(past, embeds.shape[1])
        if self._is_compact(past):
            logits = self._runner(past).forward(past, embeds, position_ids)
        else:
            logits = self.model(inputs_embeds=embeds, **self.cache_arg(past),
                                position_ids=position_ids, use_cache=True).logits
        logits = logits.float()
        self._count(embeds.shape[1], threads, t0)
        return logits

    def cache_arg(self, past) -> dict:
        """``past`` as the keyword the model's forward takes: ``cache`` from transformers
        5.24 on, ``past_key_values`` before (5.24 warns that the old name goes away)."""
        return {cache_keyword(self.model): past}

    def _is_compact(self, past) -> bool:
        return isinstance(past, KVBuffers)

    def _runner(self, past):
        """The forward that writes ``past`` (buffers): native or compact, by their type."""
        if isinstance(past, CapturedBuffers):
            return self.captured_forward()
        return self._native if isinstance(past, NativeBuffers) else self.compact

    def _uncaptured(self) -> str | None:
        from inkling.runtime.captured_llama import refusal
        return refusal(self.model)

    def captured_forward(self):
        """The captured forward over this model's weights (made on the first call)."""
        if self._captured is None:
            self._captured = CapturedLlama(self.model)
        return self._captured

    @torch.inference_mode()
    def forward(self, input_ids: torch.Tensor, past, position_ids: torch.Tensor | None = None,
                attention_mask: torch.Tensor | None = None, last_only: bool = False,
                keep_last: int = 0) -> torch.Tensor:
        """input_ids: [1, n] -> logits [1, n, vocab] (float32), or [1, 1, vocab] with
        ``last_only`` (the output layer then runs on the last position only), or
        [1, keep_last, vocab] for the last ``keep_last`` positions; ``past`` is updated
        in place."""
        t0 = time.perf_counter()
        keep = 1 if last_only else keep_last
        threads = self._threads_for(past, input_ids.shape[1])
        if self._is_compact(past):
            ids = input_ids.to(self.device)
            if position_ids is None:
                position_ids = torch.arange(past.length, past.length + ids.shape[1],
                                            device=self.device)[None]
            logits = self._runner(past).forward(past, self.compact.embed(ids), position_ids,
                                                attention_mask, keep).float()
        else:
            out = self.model(input_ids=input_ids.to(self.device), **self.cache_arg(past),
                             position_ids=position_ids, attention_mask=attention_mask,
                             use_cache=True, logits_to_keep=keep)
            logits = out.logits.float()
        self._count(input_ids.shape[1], threads, t0)
        return logits

    def _threads_for(self, past, rows: int) -> int | None:
        """Set torch's thread count for a forward of ``rows`` rows writing ``past``: by
        ``self.threads``'s measured choice where the native layers run it (the count
        changes no bit there), its fixed count otherwise. The count chosen for, or None."""
        choice = self.threads
        if choice is None:
            return None
        if isinstance(past, NativeBuffers) and NativeLlama.runs_native(rows, self.dtype):
            threads = choice.pick(rows)
            choice.use(threads)
            return threads
        choice.use(choice.fixed())
        return None

    def _count(self, rows: int, threads: int | None, t0: float) -> None:
        """A forward of ``rows`` rows that began at ``t0`` is over: its time to the stats,
        and to the thread choice where it chose (``threads``)."""
        seconds = time.perf_counter() - t0
        self.stats.forwards += 1
        self.stats.tokens += rows
        self.stats.seconds += seconds
        if threads is not None:
            self.threads.record(rows, threads, seconds * 1000)


def cache_keyword(model) -> str:
    """The name of ``model``'s key/value cache argument (``cache`` or ``past_key_values``)."""
    return "cache" if "cache" in inspect.signature(model.forward).parameters \
        else "past_key_values"
