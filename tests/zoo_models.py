"""The model zoo for tests (scripts/model_zoo.py): real families' tokenizers and shapes with
random weights, made on first use into the zoo's cache; a test that needs a folder skips with
the reason when the zoo cannot be made here (no network, no pip, no gguf package)."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _load_zoo():
    spec = importlib.util.spec_from_file_location("model_zoo", REPO / "scripts" / "model_zoo.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("model_zoo", module)
    spec.loader.exec_module(module)
    return sys.modules["model_zoo"]


zoo = _load_zoo()
ZOO_MODELS = tuple(zoo.MODELS)
ZOO_TOKENIZERS = tuple(zoo.TOKENIZERS)


def zoo_model(name: str, variant: str = "tiny") -> Path:
    """The zoo folder of ``name`` (made if missing), or the test skips saying why not."""
    try:
        return zoo.model_dir(name, variant)
    except zoo.ZooError as exc:
        pytest.skip(f"the model zoo cannot be made here: {exc}")


def zoo_gguf(name: str, outtype: str, variant: str = "tiny") -> Path:
    """The zoo folder of ``name`` as llama.cpp converts it to GGUF at ``outtype``, or a skip."""
    try:
        return zoo.gguf_file(name, variant, outtype)
    except zoo.ZooError as exc:
        pytest.skip(f"the model zoo cannot be made here: {exc}")


def zoo_tokenizer(family: str):
    """The zoo's tokenizer of ``family``, or the test skips saying why not."""
    try:
        return zoo.tokenizer(family)
    except zoo.ZooError as exc:
        pytest.skip(f"the model zoo cannot be made here: {exc}")


def zoo_runtimes():
    """A loader of tiny zoo runtimes by name (float32, CPU), each loaded once: for a
    module-scoped fixture."""
    from inkling.runtime.model_loader import load_runtime   # lazy: torch only when used
    loaded = {}

    def runtime(name):
        if name not in loaded:
            loaded[name] = load_runtime(zoo_model(name), device="cpu", dtype="float32")
        return loaded[name]
    return runtime
