"""Which forward a runtime runs, and the forwards it makes on demand.
``auto`` runs the first that can here: captured, native, compact, else reference
(docs/decisions/forward-choice.md)."""
from __future__ import annotations

import threading

from inkling.runtime import captured_llama, native_llama
from inkling.runtime.captured_llama import CapturedLlama
from inkling.runtime.errors import ModelError
from inkling.runtime.forwards import FORWARDS, Forward
from inkling.runtime.int8_panels import LEAN_ONLY, is_lean
from inkling.runtime.native_llama import NativeLlama, NativeUnavailable
from inkling.runtime.reference_forward import ReferenceForward

CAPTURED_NOTE = ("on a GPU: the compact forward's steps of up to 64 rows replayed as CUDA "
                 "graphs (a step there is bound by its launches; the native layers are CPU "
                 "code)")


class ForwardChoice:
    """A runtime's forwards; ``native`` (under ``_lock``): the native forward, or why not."""

    def __init__(self, runtime):
        self.runtime = runtime
        self.native: NativeLlama | str | None = None
        self._lock = threading.Lock()
        self._auto_refusal: str | None = None   # why auto is not native; set once, by any thread
        self._pending = False                   # not native because the module was not built yet
        self._captured: CapturedLlama | None = None
        self._reference: ReferenceForward | None = None

    def kind(self, forward: str = "auto") -> str:
        """Which forward a cache asking for ``forward`` runs; ModelError where it cannot run."""
        if forward not in FORWARDS:
            raise ValueError(f"model.forward must be one of {', '.join(FORWARDS)}, "
                             f"got {forward!r}")
        rt, usable = self.runtime, self._usable()
        if is_lean(rt.model):                     # int8 panels only: the native forward's
            if forward not in ("auto", "native"):
                raise ModelError(f"model {rt.path} has no {forward} forward: {LEAN_ONLY}")
            self.native_forward()
            return "native"
        if forward in ("compact", "native", "captured") and not usable:
            why = rt.compact_refusal or "the model was replaced after loading"
            raise ModelError(f"model {rt.path} has no {forward} forward ({why}); "
                             "use model.forward auto or reference")
        if forward == "captured" or (forward == "auto" and usable and
                                     rt.device.type == "cuda" and not self._uncaptured()):
            return "captured"
        if forward == "native":
            self.native_forward()
            return "native"
        if forward == "auto" and usable and self._auto_native() is not None:
            return "native"
        return "compact" if usable and forward != "reference" else "reference"

    def note(self) -> str:
        """Why auto does not run the native forward here ("" if it does or was not asked)."""
        rt = self.runtime
        if is_lean(rt.model):
            return "model.weights int8: the native forward holds the int8 panels"
        if not self._usable():
            return f"no compact forward: {rt.compact_refusal or 'the model was replaced'}"
        if rt.device.type == "cuda":
            why = self._uncaptured()
            return f"no captured forward: {why}" if why else CAPTURED_NOTE
        return self._auto_refusal or (self.native if isinstance(self.native, str) else "")

    def build_failed(self) -> bool:
        """Whether the native forward was tried here and did not build or load."""
        return isinstance(self.native, str)

    def build_pending(self) -> bool:
        """Whether auto runs compact because the native module was not built yet."""
        return self._pending

    def native_forward(self) -> NativeLlama:
        """The native forward (built on first call); ModelError naming why it cannot run."""
        native = self._try_native()
        if native is None:
            raise ModelError(f"model {self.runtime.path}: {self.native}; "
                             "use model.forward auto, compact or reference")
        return native

    def captured_forward(self) -> CapturedLlama:
        """The captured forward over the model's weights (made on the first call)."""
        if self._captured is None:
            self._captured = CapturedLlama(self.runtime.model)
        return self._captured

    def forward(self, forward: str = "auto") -> Forward:
        """The forward a cache asking for ``forward`` runs (``kind`` says which)."""
        kind = self.kind(forward)
        if kind == "native":
            return self.native_forward()
        if kind == "captured":
            return self.captured_forward()
        if kind == "compact":
            return self.runtime.compact
        model = self.runtime.model               # read now: a model swapped in runs too
        if self._reference is None or self._reference.held is not model:
            self._reference = ReferenceForward(model)
        return self._reference

    def _usable(self) -> bool:
        """Whether the compact forward (and those built on it) runs the runtime's model."""
        compact = self.runtime.compact
        return compact is not None and compact.model is self.runtime.model

    def _uncaptured(self) -> str | None:
        return captured_llama.refusal(self.runtime.model)

    def _auto_native(self) -> NativeLlama | None:
        """The native forward if auto chooses it, else None (``note`` says why); decided once."""
        if self._auto_refusal is None:
            rt = self.runtime
            self._auto_refusal = native_llama.refusal(rt.model, auto=True, params=rt.params) \
                or self._unbuilt()
        return None if self._auto_refusal else self._try_native()

    def _unbuilt(self) -> str:
        """"" where the native module is built, else why not (a pending build, the last failure)."""
        try:
            native_llama.load_extension(wait=False)
        except native_llama.NativePending as exc:
            self._pending = True
            return str(exc)
        except NativeUnavailable as exc:
            with self._lock:
                self.native = self.native or str(exc)
        return ""

    def _try_native(self) -> NativeLlama | None:
        """The native forward, built on the first call, or None (the reason kept)."""
        with self._lock:
            if self.native is None:
                try:
                    self.native = NativeLlama(self.runtime.model)
                except NativeUnavailable as exc:
                    self.native = str(exc)
            return None if isinstance(self.native, str) else self.native
