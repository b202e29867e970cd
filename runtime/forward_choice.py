"""Which forward a runtime runs, and the forwards it makes on demand.

``model.forward`` asks for one of :data:`FORWARDS`; ``auto`` is the fastest that runs
here: on a GPU the captured forward (``captured_llama.py``), on the CPU the native one
(``native_llama.py``) where its module is built, else the compact one
(``compact_llama.py``), else transformers' own (``reference``). :class:`ForwardChoice`
makes that decision once and owns what it made: the native forward (or why it cannot
run), the captured forward, and why auto is not native (``note``). ``forward`` hands a
cache the chosen one as a ``Forward`` (``forwards.py``); nothing after asks a store's type.
"""
from __future__ import annotations

import threading

from inkling.runtime import captured_llama, native_llama
from inkling.runtime.captured_llama import CapturedLlama
from inkling.runtime.errors import ModelError
from inkling.runtime.forwards import FORWARDS, Forward
from inkling.runtime.native_llama import NativeLlama, NativeUnavailable
from inkling.runtime.reference_forward import ReferenceForward

# why model.forward auto runs the captured forward on a GPU (inkling/stats shows it)
CAPTURED_NOTE = ("on a GPU: the compact forward's steps of up to 64 rows replayed as CUDA "
                 "graphs (a step there is bound by its launches; the native layers are CPU "
                 "code)")


class ForwardChoice:
    """The forward choice of one runtime (``runtime``: its model, device, compact forward
    and path, read as they are now: a model swapped in after loading has no compact twin).

    ``native`` holds the native forward, made at load by the loader for model.forward
    auto or native, else on first request (compiling the extension takes about 30 s once
    per machine, in the background for auto: see ``_unbuilt``; loading it 0.1 s), or the
    reason it cannot run; under ``_lock``."""

    def __init__(self, runtime):
        self.runtime = runtime
        self.native: NativeLlama | str | None = None
        self._lock = threading.Lock()
        # why auto is not native ("" where it is; set once, by whichever thread asks
        # first: the same value from any); _pending: because the module was not built yet
        self._auto_refusal: str | None = None
        self._pending = False
        # the compact forward's steps as CUDA graphs, made on first request: what
        # model.forward auto runs on a GPU
        self._captured: CapturedLlama | None = None
        self._reference: ReferenceForward | None = None

    def kind(self, forward: str = "auto") -> str:
        """``native``, ``compact``, ``captured`` or ``reference``: which forward a cache
        asking for ``forward`` (auto | native | compact | captured | reference) runs.
        ``auto`` is the fastest that runs here: on a GPU captured (``note`` says why),
        on the CPU native, else compact (``note`` says why not native; the loader logs
        it), else transformers' own. Asking for ``native`` or ``compact`` on a model
        without one is an error naming the reason."""
        if forward not in FORWARDS:
            raise ValueError(f"model.forward must be one of {', '.join(FORWARDS)}, "
                             f"got {forward!r}")
        rt, usable = self.runtime, self._usable()
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
        """Why ``model.forward auto`` does not run the native forward here ("" when it
        does, or has not been asked yet)."""
        rt = self.runtime
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
        """Whether auto runs the compact forward because the native module was not built
        when it was chosen (a build then runs in the background, for the next start)."""
        return self._pending

    def native_forward(self) -> NativeLlama:
        """The native forward over the model (built on the first call); raises
        ModelError naming why it cannot run here (a GPU, float16, a failed build)."""
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
        if self._reference is None or self._reference.model is not model:
            self._reference = ReferenceForward(model)
        return self._reference

    def _usable(self) -> bool:
        """Whether the compact forward (and those built on it) runs the runtime's model."""
        compact = self.runtime.compact
        return compact is not None and compact.model is self.runtime.model

    def _uncaptured(self) -> str | None:
        return captured_llama.refusal(self.runtime.model)

    def _auto_native(self) -> NativeLlama | None:
        """The native forward when model.forward auto chooses it, or None with the reason
        in ``note``. Chosen once: the forward stays for the life of the runtime."""
        if self._auto_refusal is None:
            self._auto_refusal = native_llama.refusal(self.runtime.model, auto=True) or \
                self._unbuilt()
        return None if self._auto_refusal else self._try_native()

    def _unbuilt(self) -> str:
        """"" where the native module is loaded or built (auto then loads it); else why
        not: not built yet (a build started in the background; auto does not wait for a
        compile), or the failure of the last build (kept as ``native``)."""
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
