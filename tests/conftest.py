"""Shared fixtures: a tiny random-weight model folder built from scratch (no downloads)."""
from __future__ import annotations

import json
import os
from pathlib import Path

# tiny models run fastest on one thread, and the machine has two cores to share
os.environ.setdefault("OMP_NUM_THREADS", "1")

import pytest
import pytest_lsp
from pytest_lsp import ClientServerConfig, LanguageClient

from lsp_session import SERVER, start_session

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"


def make_tiny_model(out: Path, vocab_size: int = 600, seed: int = 0, **overrides) -> Path:
    """A random-weight Llama with a tokenizer trained on a few stdlib files."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from inkling.models.corpus import stdlib_root
    from inkling.training.tokenizer_recipe import save_tokenizer, train_tokenizer

    out.mkdir(parents=True, exist_ok=True)
    root = stdlib_root()
    texts = [(root / name).read_text(encoding="utf-8")
             for name in ("textwrap.py", "bisect.py", "heapq.py", "shlex.py")]
    tok = train_tokenizer(texts, vocab_size)
    save_tokenizer(tok, out, 2048)
    torch.manual_seed(seed)
    cfg = dict(vocab_size=tok.get_vocab_size(), hidden_size=64, intermediate_size=128,
               num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
               max_position_embeddings=2048, tie_word_embeddings=True, eos_token_id=0,
               pad_token_id=0, bos_token_id=None)
    cfg.update(overrides)
    LlamaForCausalLM(LlamaConfig(**cfg)).save_pretrained(out, safe_serialization=True)
    (out / "inkling.json").write_text(json.dumps(
        {"fim_family": "inkling", "fim_order": "spm", "trained_context": 1024}))
    return out


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory) -> Path:
    return make_tiny_model(tmp_path_factory.mktemp("tiny-model"))


@pytest.fixture(scope="session")
def tiny_runtime(tiny_model_dir):
    from inkling.runtime.model_loader import load_runtime
    return load_runtime(tiny_model_dir, device="cpu", dtype="float32")


# prompts where a random model with wide weights is unsure of its first tokens (the
# multi-draft decoders' tests: branches, superposed, sequential, beam)
PROMPTS = ["def area(width, height):\n    return ", "import os\n\nfor name in os.",
           "class Stack:\n    def push(self, item):\n        self.", "x = [1, 2, 3]\ny = "]


@pytest.fixture(scope="module")
def wide_runtime(tmp_path_factory):
    """A tiny model with wide random weights (initializer_range 0.3): unsure drafts."""
    from inkling.runtime.model_loader import load_runtime
    d = make_tiny_model(tmp_path_factory.mktemp("wide"), initializer_range=0.3, seed=11)
    return load_runtime(d, device="cpu", dtype="float32")


@pytest.fixture(scope="session")
def bundled_model_dir() -> Path:
    from inkling.models import BUNDLED_MODEL_DIR
    if not (BUNDLED_MODEL_DIR / "config.json").is_file():
        pytest.skip("the bundled model is not in this checkout")
    return BUNDLED_MODEL_DIR


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    if not SHARED.is_dir():
        pytest.skip("../shared is not beside this checkout")
    return SHARED


@pytest.fixture(scope="module")
def server_options(tiny_model_dir) -> dict:
    """The initializationOptions the `client` fixture's server starts with; a test module
    overrides this fixture to start it otherwise."""
    return {"model": {"path": str(tiny_model_dir)}}


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER), scope="module")
async def client(lsp_client: LanguageClient, server_options):
    """The real `inkling serve` as a subprocess, one a test module, initialised with
    ``server_options`` and ready (tests using it are marked slow)."""
    await start_session(lsp_client, server_options)
    yield
    await lsp_client.shutdown_session()
