"""What a small model is: under SMALL_MODEL_PARAMS parameters a forward is bound by its
per-op overhead rather than by its weight products. Below it model.forward auto runs the
native layers (``native_llama.refusal``) and the CPU forward starts on one thread,
measured against every core (``model_loader.pick_threads``)."""

SMALL_MODEL_PARAMS = 100_000_000
