"""The compact forward with its decoder layers in one C++ call (``native/llama_step.cpp``).

A one-row step of the bundled model through :class:`~.compact_llama.CompactLlama` is
about 200 torch ops; 1.26 of its 3.68 ms are spent outside the weight products and
attention (``benchmarks/forward_bound.py``), and torch's GEMV streams the small weights at
half the rate a plain read reaches. :class:`NativeLlama` runs the layers of a forward of
up to :data:`MAX_ROWS` rows as one call of plain loops over the same weights (the
model's own, [in, out] as ``cpu_layout`` holds them, copied into panels) and the same
preallocated key / value buffers; the rotary tables stay in torch. From
:data:`ATTEND_MANY_ROWS` rows attention runs as two batched GEMMs a layer (each cached
key read once for all rows); forwards of more than :data:`MAX_ROWS` rows (long prompt
chunks) run the compact forward, where MKL's GEMM for the projections pays.

A one-row step streams every weight once and does little else: its time is the time to
read them. Where every weight is a float16 value (the bundled model ships float16 shards,
loaded as float32) the panels hold float16, read with the CPU's conversion instruction:
half the bytes, the same float32 products and sums, bit for bit. The output layer runs on
the same kernel (its float16 panels: as fast as oneDNN's GEMM from 8 rows, faster below).
On this 2-core CPU a one-row step of the bundled model went from 0.86 to 0.38 ms (600
cached tokens; ``benchmarks/decode_step.py``).

Float32 on the CPU only, Llama-family layers without biases (``refusal`` says why not).
The extension is compiled once per machine (``native_build.py``: about 30 s, under a lock
that a killed build never leaves held, with a time limit). :func:`load_extension` waits
for it (model.forward native, ``inkling build-native``); ``load_extension(wait=False)``
(model.forward auto) does not: where the module is not built it starts the build in the
background and raises :class:`NativePending`, and the compact forward serves that
process. It raises :class:`NativeUnavailable` naming what failed, and the model loader
then keeps the compact forward, saying so.
"""
from __future__ import annotations

import logging
import threading
import torch

from inkling.runtime import native_build
from inkling.runtime.compact_llama import CompactLlama
from inkling.runtime.cpu_layout import InputMajorLinear
from inkling.runtime.kv_buffers import KVBuffers
from inkling.runtime.model_size import SMALL_MODEL_PARAMS

log = logging.getLogger(__name__)

MAX_ROWS = 64                       # more rows run the compact forward (MKL's GEMM; benchmarks/decode_step.py)
ATTEND_MANY_ROWS = 16               # from this many rows attention runs as two GEMMs a layer
SOURCE = native_build.SOURCE


class NativeUnavailable(RuntimeError):
    """The native layers cannot run here (no compiler, a failed build, a model outside
    what they cover)."""


class NativePending(NativeUnavailable):
    """The native layers are not built yet, and model.forward auto does not wait: a
    build runs in the background; the compact forward serves this process."""


class _Extension:
    """The compiled module, loaded once per process (``native_build.py`` builds it)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._module = None
        self._error: str | None = None

    def get(self, wait: bool = True):
        """The module; ``wait``: build it now where it is not built (else NativePending,
        with a build started in the background)."""
        with self._lock:
            if self._module is None and self._error is None:
                if not wait:
                    _refuse_unbuilt()
                try:
                    self._module = _build()
                except Exception as exc:   # a compiler's failure has many types
                    self._error = _first_lines(exc)
            if self._module is None:
                raise NativeUnavailable(f"the native layers did not build ({self._error})")
            return self._module


def _first_lines(exc: Exception) -> str:
    """The failure in a line: its first, and the compiler's first error where it has one
    (where the message starts with the command line)."""
    lines = str(exc).strip().splitlines()
    said = f"{type(exc).__name__}: {lines[0] if lines else ''}"
    error = next((line.strip() for line in lines if "error:" in line), None)
    return said[:300] + (f" ... {error}" if error and error not in said else "")


def _build():
    """Build the module now where it is not built (or wait for the build running), and
    load it."""
    return native_build.load_module(native_build.build(native_build.plan(SOURCE)))


def _refuse_unbuilt() -> None:
    """Nothing where the module is built; else NativeUnavailable with the last build's
    failure (or why none can start: a cache folder it cannot write, no flock), or
    NativePending with a build started in the background."""
    try:
        p = native_build.plan(SOURCE)
        if p.module.is_file():
            return
        failed = native_build.failure(p)
        started = None if failed else native_build.start_background(p, SOURCE)
    except (OSError, ImportError, native_build.BuildFailed) as exc:
        raise NativeUnavailable(f"the native layers cannot be built here "
                                f"({_first_lines(exc)})") from None
    if failed:
        raise NativeUnavailable(f"the native layers did not build ({failed}); "
                                "`inkling build-native` tries again")
    raise NativePending(f"the native forward is not built yet: {started}; this process "
                        "runs the compact forward, the next start the native one")


def built() -> bool:
    """Whether the module is loaded here or built on this machine (loading it is then
    quick)."""
    return EXTENSION_BUILD._module is not None or native_build.plan(SOURCE).module.is_file()


EXTENSION_BUILD = _Extension()


def load_extension(wait: bool = True):
    """The compiled extension; ``wait``: built now where it is not (the foreground);
    else NativePending where it is not built. Raises NativeUnavailable."""
    return EXTENSION_BUILD.get(wait)


def refusal(model: torch.nn.Module, auto: bool = False) -> str | None:
    """Why the native layers cannot run ``model`` (beyond the compact forward's own
    refusal), or None. ``auto``: also why model.forward auto does not choose them: a model
    of SMALL_MODEL_PARAMS or more, whose forward is bound by its weight products (MKL's then)
    rather than by per-op overhead, and whose panels would double a large memory."""
    if auto:
        size = sum(p.numel() for p in model.parameters())
        if size >= SMALL_MODEL_PARAMS:
            return (f"{size / 1e6:.0f} M parameters: the native layers pay for models under "
                    f"{SMALL_MODEL_PARAMS // 1_000_000} M (model.forward native asks for them)")
    params = next(model.parameters())
    if params.device.type != "cpu":
        return f"the model is on {params.device.type} (the native layers are CPU code)"
    if params.dtype != torch.float32:
        return f"the model is {params.dtype} (the native layers are float32)"
    for block in model.model.layers:
        a, m = block.self_attn, block.mlp
        for lin in (a.q_proj, a.k_proj, a.v_proj, a.o_proj, m.gate_proj, m.up_proj,
                    m.down_proj):
            if not isinstance(lin, InputMajorLinear):
                return f"{type(lin).__name__} layers (the native layers read [in, out] weights)"
            if lin.bias is not None:
                return "biases in the attention projections"
    if not torch.is_tensor(getattr(block.input_layernorm, "weight", None)):
        return "norms without a weight"
    return None


class NativeBuffers(KVBuffers):
    """Key / value buffers the native layers write (the same layout)."""


class NativeLlama(CompactLlama):
    """:class:`CompactLlama` whose forwards of at most MAX_ROWS rows run the decoder
    layers in C++; the same signature and results (to float rounding)."""

    name = "native"

    def __init__(self, model: torch.nn.Module, extension=None):
        super().__init__(model)
        why = refusal(model)
        if why is not None:
            raise NativeUnavailable(f"{type(model).__name__}: no native layers: {why}")
        self.extension = extension or load_extension()
        self.eps = float(model.model.layers[0].input_layernorm.variance_epsilon)
        self.final_norm = self.norm.weight.detach().contiguous()
        self.no_mask = torch.empty(0)
        self.repack()

    def repack(self) -> None:
        """Copy the model's weights into the panels the kernel reads: once at load, and
        again by whoever changes the weights in place afterwards (the panels are copies).

        The projections as panels of 16 columns (llama_step.cpp: pack_panels): the layers'
        weights twice in memory (auto runs native for models under SMALL_MODEL_PARAMS only:
        refusal(..., auto=True)). Where every weight is a float16 value (the bundled
        model's float16 shards, loaded as float32) and the CPU converts float16 in one
        instruction, the panels hold float16: half the bytes a product reads, the same
        products and sums (``half_panels``). Where the model was loaded from int8 weights
        (``int8_weights.py``), those weights' panels are int8 with a scale per column: a
        quarter of the bytes. The output layer, when it has no bias, gets panels too: its
        logits by the same kernel."""
        weights: list[torch.Tensor] = []
        names: list[str] = []          # each weight's name in the model (its int8 values')
        for i, block in enumerate(self.model.model.layers):
            a, m = block.self_attn, block.mlp
            weights += [block.input_layernorm.weight,
                        *(lin.weight_t for lin in (a.q_proj, a.k_proj, a.v_proj, a.o_proj)),
                        block.post_attention_layernorm.weight,
                        *(lin.weight_t for lin in (m.gate_proj, m.up_proj, m.down_proj))]
            names += [f"model.layers.{i}.{n}.weight" for n in (
                "input_layernorm", "self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj",
                "self_attn.o_proj", "post_attention_layernorm", "mlp.gate_proj", "mlp.up_proj",
                "mlp.down_proj")]
        head = _head_weight(self.model)
        int8 = getattr(self.model, "inkling_int8", {})
        head_name = "lm_head.weight" if "lm_head.weight" in int8 else "model.embed_tokens.weight"
        self.half = half_panels(self.extension, [w for w, n in zip(weights, names)
                                                 if n not in int8] +
                                ([head] if head_name not in int8 else []))
        self.weights = [w.detach().contiguous() if w.dim() == 1 else
                        self._panels(w, int8.get(n)) for w, n in zip(weights, names)]
        self.vocab = int(head.shape[1]) if head is not None else 0
        self.head_panels = None if head is None else self._panels(head, int8.get(head_name))

    def _panels(self, w: torch.Tensor, int8) -> torch.Tensor:
        """w [in, out] as the kernel's panels: int8 ones where the model holds its int8
        values and scales (int8 [out, in], scale [out]: ``runtime/int8_weights.py``), else
        float16 or float32 (``self.half``)."""
        if int8 is not None:
            q, scale = int8
            return self.extension.pack_int8_panels(q.t().contiguous(), scale.contiguous())
        return self.extension.pack_panels(w.detach().contiguous(), self.half)

    def new_buffers(self, dtype: torch.dtype, device: torch.device) -> NativeBuffers:
        return NativeBuffers.for_config(self.config, dtype, device)

    @staticmethod
    def runs_native(rows: int, dtype: torch.dtype) -> bool:
        """Whether a forward of ``rows`` rows runs the native layers (whose sums never
        depend on the thread count), not the compact forward."""
        return rows <= MAX_ROWS and dtype == torch.float32

    def picks_threads(self, rows: int) -> bool:
        return self.runs_native(rows, self.embed.weight.dtype)

    @torch.inference_mode()
    def forward(self, kv: KVBuffers, embeds: torch.Tensor, positions: torch.Tensor,
                mask: torch.Tensor | None = None, keep: int = 0) -> torch.Tensor:
        """As :meth:`CompactLlama.forward`: embeds [1, n, hidden], positions [1, n],
        mask None or [1, 1, n, length + n] (additive float or bool) -> logits
        [1, keep or n, vocab]."""
        n, past = embeds.shape[1], kv.length
        if not self.runs_native(n, embeds.dtype):
            return super().forward(kv, embeds, positions, mask, keep)
        kv.reserve(n)
        cos, sin = self.rope(embeds, positions)                           # [n, d] each
        x = embeds[0].contiguous().clone()                               # [n, hidden]
        hidden = self.extension.layers_forward(
            x, self.weights, kv.keys, kv.values, past, cos.contiguous(), sin.contiguous(),
            _additive(mask, self.no_mask), self.final_norm, self.eps, self.scaling,
            self.heads, self.kv_heads, keep, ATTEND_MANY_ROWS)             # [keep or n, hidden]
        kv.length = past + n
        if self.head_panels is None:
            return self.head(hidden)[None]                                # [1, keep, vocab]
        return self.extension.project_packed(hidden, self.head_panels, self.vocab)[None]


def _head_weight(model: torch.nn.Module) -> torch.Tensor | None:
    """The output layer's weight as [hidden, vocab] (a transposed copy where it is held
    [vocab, hidden]), or None where it has a bias (it then stays torch's)."""
    head = model.lm_head
    if getattr(head, "bias", None) is not None:
        return None
    if isinstance(head, InputMajorLinear):
        return head.weight_t
    return head.weight.t().contiguous()


def half_panels(extension, weights: list[torch.Tensor | None]) -> bool:
    """Whether the panels of ``weights`` (the 2-D ones; None skipped) can be float16: every
    weight a float16 value (so a product reads exactly what the float32 panels hold) and
    the CPU converting float16 in one instruction (``fast_half``)."""
    if not extension.fast_half():
        return False
    for w in weights:
        if w is None or w.dim() != 2:
            continue
        if not torch.equal(w.to(torch.float16).to(torch.float32), w):
            return False
    return True


def _additive(mask: torch.Tensor | None, empty: torch.Tensor) -> torch.Tensor:
    """mask [1, 1, n, L] (bool: True where a row may attend; or additive float) ->
    additive float32 [n, L], or ``empty`` for the causal default."""
    if mask is None:
        return empty
    m = mask[0, 0]
    if m.dtype == torch.bool:
        return torch.zeros(m.shape, dtype=torch.float32).masked_fill_(
            ~m, torch.finfo(torch.float32).min)
    return m.to(torch.float32).contiguous()
