"""One Forward: each forward is one class behind runtime/forwards.py's Protocol, chosen
once (forward_choice.py), and nothing in runtime/ or cache/ asks a key/value store's type
to choose one."""
import ast
from pathlib import Path

import pytest
import torch

from inkling.cache.prompt_cache import PromptCache
from inkling.runtime import native_llama
from inkling.runtime.forwards import Forward
from inkling.runtime.model_loader import load_runtime

ROOT = Path(__file__).resolve().parents[2]
STORES = {"KVBuffers", "NativeBuffers", "CapturedBuffers", "DynamicKV", "DynamicCache", "Cache"}


def _names(node: ast.AST) -> set[str]:
    return {n.id if isinstance(n, ast.Name) else n.attr for n in ast.walk(node)
            if isinstance(n, (ast.Name, ast.Attribute))}


def test_no_forward_is_chosen_by_the_type_of_a_store():
    found = []
    for path in sorted((ROOT / "runtime").glob("*.py")) + sorted((ROOT / "cache").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                    node.func.id in ("isinstance", "type") and len(node.args) >= 1:
                against = _names(node.args[-1]) if node.func.id == "isinstance" else set()
                if against & STORES:
                    found.append(f"{path.name}:{node.lineno}")
            if isinstance(node, ast.Compare) and any(isinstance(op, (ast.Is, ast.IsNot))
                                                     for op in node.ops):
                if "type" in _names(node.left) and _names(node) & STORES:
                    found.append(f"{path.name}:{node.lineno}")
    assert not found, found


@pytest.fixture(scope="module")
def bundled(bundled_model_dir):
    return load_runtime(bundled_model_dir, device="cpu", dtype="float32")


def _available(rt) -> list[str]:
    names = ["compact", "captured", "reference"]
    return names + (["native"] if native_llama.built() else [])


def test_each_forward_is_a_forward_and_gives_the_references_logits(bundled):
    ids = bundled.encode("def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n")
    tree, parents = ids[:4], [-1, 0, 1, 0]
    want = None
    for name in ["reference"] + [n for n in _available(bundled) if n != "reference"]:
        cache = PromptCache(bundled, "full", forward=name)
        assert isinstance(cache.forward, Forward) and cache.forward.name == name
        assert cache.forward.device == bundled.device
        got = [cache.extend(ids, last_only=True), cache.extend([ids[0]]),
               cache.extend_tree(tree, parents)]
        if want is None:
            want = got
            continue
        for a, b in zip(want, got):
            assert torch.allclose(a, b, atol=1e-3, rtol=0), (name, (a - b).abs().max())
            assert torch.equal(a.argmax(-1), b.argmax(-1)), name
