"""The compact forward with its decoder layers in one C++ call (``native/llama_step.cpp``).
Up to MAX_ROWS rows run over panels copied from the weights, longer forwards the compact one:
docs/decisions/forward-choice.md, docs/decisions/int8-panels.md."""
from __future__ import annotations

import logging
import threading
from typing import Callable

import torch

from inkling.runtime import native_build
from inkling.runtime.compact_llama import CompactLlama
from inkling.runtime.cpu_layout import InputMajorLinear, PackedLinear
from inkling.runtime.int8_panels import head_panels, is_lean
from inkling.runtime.kv_buffers import KVBuffers
from inkling.runtime.model_size import NATIVE_AUTO_MAX_PARAMS

log = logging.getLogger(__name__)

MAX_ROWS = 64                       # more rows run the compact forward, where MKL's GEMM pays
ATTEND_MANY_ROWS = 16               # from here attention is two GEMMs a layer (each key read once)
SOURCE = native_build.SOURCE


class NativeUnavailable(RuntimeError):
    """The native layers cannot run here (no compiler, a failed build, a model outside them)."""


class NativePending(NativeUnavailable):
    """The module is not built yet and auto does not wait: it builds in the background."""


class _Extension:
    """The compiled module, loaded once per process under a lock."""

    def __init__(self):
        self._lock = threading.Lock()
        self._module = None
        self._error: str | None = None

    def get(self, wait: bool = True):
        """The module (``wait``: build it now, else NativePending); NativeUnavailable."""
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
    """The failure in a line: its first, and the compiler's first ``error:`` line if any."""
    lines = str(exc).strip().splitlines()
    said = f"{type(exc).__name__}: {lines[0] if lines else ''}"
    error = next((line.strip() for line in lines if "error:" in line), None)
    return said[:300] + (f" ... {error}" if error and error not in said else "")


def _build():
    """Build the module where it is not built (or wait for the running build), and load it."""
    return native_build.load_module(native_build.build(native_build.plan(SOURCE)))


def _refuse_unbuilt() -> None:
    """Return where the module is built; else raise NativeUnavailable or NativePending."""
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
    """Whether the module is loaded here or built on this machine."""
    return EXTENSION_BUILD._module is not None or native_build.plan(SOURCE).module.is_file()


EXTENSION_BUILD = _Extension()


def load_extension(wait: bool = True):
    """The compiled extension (``wait``: built now); NativeUnavailable, NativePending."""
    return EXTENSION_BUILD.get(wait)


def refusal(model: torch.nn.Module, auto: bool = False, params: int | None = None) -> str | None:
    """Why the native layers cannot (or, ``auto``, should not) run ``model``, else None.
    ``params``: its size as the checkpoint stores it (else counted from ``model``)."""
    if auto:
        size = params if params is not None else sum(p.numel() for p in model.parameters())
        if size >= NATIVE_AUTO_MAX_PARAMS:
            return (f"{size / 1e6:.0f} M parameters: the native layers are measured faster for "
                    f"models under {NATIVE_AUTO_MAX_PARAMS // 1_000_000} M (model.forward "
                    "native asks for them)")
    lean = is_lean(model)
    held = model.model.norm.weight if lean else next(model.parameters())
    if held.device.type != "cpu":
        return f"the model is on {held.device.type} (the native layers are CPU code)"
    if held.dtype != torch.float32:
        return f"the model is {held.dtype} (the native layers are float32)"
    kinds = (torch.nn.Linear,) if lean else (InputMajorLinear, PackedLinear)
    for block in model.model.layers:
        a, m = block.self_attn, block.mlp
        for lin in (a.q_proj, a.k_proj, a.v_proj, a.o_proj, m.gate_proj, m.up_proj,
                    m.down_proj):
            if not isinstance(lin, kinds):
                return f"{type(lin).__name__} layers (the native layers read [in, out] weights)"
    return structure_refusal(model)


def structure_refusal(model: torch.nn.Module) -> str | None:
    """Why the native layers cannot run ``model``'s layers, by their structure alone (biases
    and norms: a model on the meta device is answered too), else None."""
    for block in model.model.layers:
        a, m = block.self_attn, block.mlp
        if any(lin.bias is not None for lin in (a.o_proj, m.gate_proj, m.up_proj, m.down_proj)):
            return ("biases in the output projection or the MLP (the native layers add "
                    "q / k / v biases only)")
        if not torch.is_tensor(getattr(block.input_layernorm, "weight", None)):
            return "norms without a weight"
    return None


class NativeBuffers(KVBuffers):
    """Key / value buffers the native layers write (KVBuffers' layout)."""


class NativeLlama(CompactLlama):
    """CompactLlama whose forwards of at most MAX_ROWS rows run the layers in C++."""

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
        """Copy the weights into the kernel's panels again (after changing them in place).
        16-bit where every weight is such a value (the same sums: ``panel_storage``), int8 where
        the model holds int8; the q / k / v biases as they are. Each weight is read (a copy
        where it is held packed) and panelled one at a time, so that load holds one copy."""
        sources: list[tuple[str, torch.nn.Module | torch.Tensor]] = []   # (name, its holder)
        biases: list[torch.Tensor] = []                 # q, k, v a layer (empty: none)
        for i, block in enumerate(self.model.model.layers):
            a, m = block.self_attn, block.mlp
            biases += [torch.empty(0) if lin.bias is None else lin.bias.detach().contiguous()
                       for lin in (a.q_proj, a.k_proj, a.v_proj)]
            sources += [(f"model.layers.{i}.{n}.weight", holder) for n, holder in (
                ("input_layernorm", block.input_layernorm.weight), ("self_attn.q_proj", a.q_proj),
                ("self_attn.k_proj", a.k_proj), ("self_attn.v_proj", a.v_proj),
                ("self_attn.o_proj", a.o_proj),
                ("post_attention_layernorm", block.post_attention_layernorm.weight),
                ("mlp.gate_proj", m.gate_proj), ("mlp.up_proj", m.up_proj),
                ("mlp.down_proj", m.down_proj))]
        if is_lean(self.model):
            self._take_panels(sources, biases)
            return
        int8 = getattr(self.model, "inkling_int8", {})
        head_name = "lm_head.weight" if "lm_head.weight" in int8 else "model.embed_tokens.weight"
        self.biases = biases if any(b.numel() for b in biases) else []
        self.storage = panel_storage(self.extension, [
            *(lambda h=h: _weight_t(h) for n, h in sources
              if n not in int8 and not torch.is_tensor(h)),   # the norms: 1-D
            *([lambda: _head_weight(self.model)] if head_name not in int8 else [])])
        self.weights = [h.detach().contiguous() if torch.is_tensor(h) else
                        self._panels(_weight_t(h), int8.get(n)) for n, h in sources]
        head = _head_weight(self.model)
        self.vocab = int(head.shape[1]) if head is not None else 0
        self.head_panels = None if head is None else self._panels(head, int8.get(head_name))

    def _take_panels(self, sources: list, biases: list[torch.Tensor]) -> None:
        """A lean model's (``int8_panels.py``): its panels as they are, no copy."""
        panels = self.model.inkling_panels
        self.biases = biases if any(b.numel() for b in biases) else []
        self.storage = "int8"
        self.weights = [h.detach().contiguous() if torch.is_tensor(h) else panels[n]
                        for n, h in sources]
        self.head_panels = head_panels(self.model)
        self.vocab = int(self.model.config.vocab_size)

    def _panels(self, w: torch.Tensor, int8) -> torch.Tensor:
        """w [in, out] as panels: int8 from the model's (int8, scale), else ``storage``'s."""
        if int8 is not None:
            q, scale = int8
            return self.extension.pack_int8_panels(q.t().contiguous(), scale.contiguous())
        return self.extension.pack_panels(w.detach().contiguous(), self.storage)

    def new_buffers(self, dtype: torch.dtype, device: torch.device) -> NativeBuffers:
        return NativeBuffers.for_config(self.config, dtype, device)

    @staticmethod
    def runs_native(rows: int, dtype: torch.dtype) -> bool:
        """Whether ``rows`` rows run the native layers (whose sums no thread count changes)."""
        return rows <= MAX_ROWS and dtype == torch.float32

    def picks_threads(self, rows: int) -> bool:
        return self.runs_native(rows, self.dtype)

    @torch.inference_mode()
    def forward(self, kv: KVBuffers, embeds: torch.Tensor, positions: torch.Tensor,
                mask: torch.Tensor | None = None, keep: int = 0) -> torch.Tensor:
        """As :meth:`CompactLlama.forward`: the same shapes, results to float rounding."""
        n, past = embeds.shape[1], kv.length
        if n > MAX_ROWS and is_lean(self.model):
            return self._forward_chunks(kv, embeds, positions, mask, keep)
        if not self.runs_native(n, embeds.dtype):
            return super().forward(kv, embeds, positions, mask, keep)
        kv.reserve(n)
        cos, sin = self.rope(embeds, positions)                           # [n, d] each
        x = embeds[0].contiguous().clone()                               # [n, hidden]
        hidden = self.extension.layers_forward(
            x, self.weights, self.biases, kv.keys, kv.values, past, cos.contiguous(),
            sin.contiguous(), _additive(mask, self.no_mask), self.final_norm, self.eps,
            self.scaling, self.heads, self.kv_heads, keep, ATTEND_MANY_ROWS)  # [keep or n, hidden]
        kv.length = past + n
        if self.head_panels is None:
            return self.head(hidden)[None]                                # [1, keep, vocab]
        return self.extension.project_packed(hidden, self.head_panels, self.vocab)[None]


    def _forward_chunks(self, kv: KVBuffers, embeds: torch.Tensor, positions: torch.Tensor,
                        mask: torch.Tensor | None, keep: int) -> torch.Tensor:
        """A forward of more than MAX_ROWS rows as native forwards of MAX_ROWS rows each (a lean
        model has no float weights for the compact one): each chunk attends to the cache and
        the chunks before it, as the one forward's rows would."""
        n, past = embeds.shape[1], kv.length
        wanted = n if keep == 0 else keep                    # the last rows whose logits return
        hidden = []
        for first in range(0, n, MAX_ROWS):
            end = min(n, first + MAX_ROWS)
            part = None if mask is None else mask[:, :, first:end, :past + end]
            x = embeds[0, first:end].contiguous().clone()                  # [rows, hidden]
            cos, sin = self.rope(embeds, positions[:, first:end])
            kv.reserve(end - first)
            out = self.extension.layers_forward(
                x, self.weights, self.biases, kv.keys, kv.values, kv.length, cos.contiguous(),
                sin.contiguous(), _additive(part, self.no_mask), self.final_norm, self.eps,
                self.scaling, self.heads, self.kv_heads, 0, ATTEND_MANY_ROWS)   # [rows, hidden]
            kv.length += end - first
            if end > n - wanted:
                hidden.append(out[max(0, n - wanted - first):])
        rows = torch.cat(hidden)                                            # [wanted, hidden]
        return self.extension.project_packed(rows, self.head_panels, self.vocab)[None]


def _weight_t(linear: torch.nn.Module) -> torch.Tensor:
    """A layer's weight [in, out]: InputMajorLinear's own, a PackedLinear's unpacked (a copy,
    for its panels: the compact forward keeps the packed one for longer forwards)."""
    if isinstance(linear, PackedLinear):
        return linear.weight.t().contiguous()
    return linear.weight_t


def _head_weight(model: torch.nn.Module) -> torch.Tensor | None:
    """The output layer's weight [hidden, vocab] (a copy if held transposed); None with a bias."""
    head = model.lm_head
    if getattr(head, "bias", None) is not None:
        return None
    if isinstance(head, InputMajorLinear):
        return head.weight_t
    return head.weight.t().contiguous()


def panel_storage(extension, weights: list[Callable[[], torch.Tensor | None]]) -> str:
    """The 16-bit storage the 2-D panels of ``weights`` (each read when called, then dropped)
    can have, else float32: float16 where each is a float16 value (``fast_half``), else
    bfloat16 where each is a bfloat16 value (a bfloat16 checkpoint read as float32, whose small
    weights float16 cannot hold; ``fast_bfloat16``)."""
    fits = [d for d, fast in ((torch.float16, extension.fast_half()),
                              (torch.bfloat16, extension.fast_bfloat16())) if fast]
    for read in weights:
        w = read()
        if w is not None and w.dim() == 2:
            fits = [d for d in fits if torch.equal(w.to(d).to(torch.float32), w)]
        if not fits:
            break
    return str(fits[0]).removeprefix("torch.") if fits else "float32"


def _additive(mask: torch.Tensor | None, empty: torch.Tensor) -> torch.Tensor:
    """mask [1, 1, n, L] (bool: True attends; or additive) -> float32 [n, L], None -> ``empty``."""
    if mask is None:
        return empty
    m = mask[0, 0]
    if m.dtype == torch.bool:
        return torch.zeros(m.shape, dtype=torch.float32).masked_fill_(
            ~m, torch.finfo(torch.float32).min)
    return m.to(torch.float32).contiguous()
