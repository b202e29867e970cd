"""Random-weight models of the shapes GPU users run, and the forwards checked against
transformers' on them (``gpu_suite.py``'s correctness section).

Shapes (hidden, intermediate, layers, heads, key/value heads): ``0.5b`` and ``1.5b`` are
Qwen2.5-Coder's; the Llama- and StarCoder2-shaped models take the same sizes with their
families' vocabularies. Nothing is downloaded: a config, random weights (q/k/v biases
drawn too, so they matter), made on the device.
"""
from __future__ import annotations

import copy
import random

import torch

SHAPES = {
    "tiny": (64, 128, 2, 4, 2),
    "0.5b": (896, 4864, 24, 14, 2),
    "1.5b": (1536, 8960, 28, 12, 2),
}
VOCAB = {"qwen2": 151936, "llama": 32256, "starcoder2": 49152}
TINY_VOCAB = 512
# the mean ‖out - ref‖ / ‖ref‖ a forward may differ from transformers' float32 by, per
# dtype (or twice transformers' own mean error in that dtype, the larger)
TOLERANCE = {torch.bfloat16: 1e-2, torch.float16: 2e-3}


def random_model(family: str, size: str, dtype: torch.dtype, device: str,
                 seed: int = 0) -> torch.nn.Module:
    """A ``family`` model of ``size`` with random weights, on ``device``, eval mode."""
    from transformers import AutoConfig, AutoModelForCausalLM
    hidden, inter, layers, heads, kv = SHAPES[size]
    extra = {"use_bias": True} if family == "starcoder2" else {}
    cfg = AutoConfig.for_model(
        family, vocab_size=TINY_VOCAB if size == "tiny" else VOCAB[family], hidden_size=hidden,
        intermediate_size=inter, num_hidden_layers=layers, num_attention_heads=heads,
        num_key_value_heads=kv, max_position_embeddings=32768, sliding_window=None,
        tie_word_embeddings=family == "qwen2", bos_token_id=0, eos_token_id=0, **extra)
    torch.manual_seed(seed)
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(cfg, dtype=dtype, attn_implementation="sdpa")
    for block in model.model.layers:
        for proj in (block.self_attn.q_proj, block.self_attn.k_proj, block.self_attn.v_proj):
            if proj.bias is not None:
                torch.nn.init.normal_(proj.bias, std=0.5)
    return model.eval()


def weight_bytes(model: torch.nn.Module) -> int:
    """The bytes a one-row step reads of the weights: every parameter, the embedding table
    only where the output layer is tied to it (a step reads one row of it otherwise)."""
    total = sum(p.numel() * p.element_size() for p in model.parameters())
    emb = model.get_input_embeddings().weight
    tied = emb.data_ptr() == model.get_output_embeddings().weight.data_ptr()
    return total if tied else total - emb.numel() * emb.element_size()


def compare_forwards(model: torch.nn.Module, prompt: int, steps: int = 4,
                     tree: int = 16) -> dict:
    """The compact and captured forwards against transformers' on ``model``: a prompt of
    ``prompt`` tokens, ``steps`` one-row steps (greedy), then twice a draft tree of
    ``tree`` rows and ``steps`` steps more (on a GPU the later steps of each size replay
    their graphs). Every forward is measured against transformers' in float32 (on
    a float32 copy where ``model`` is not: then transformers' own forward in the model's
    dtype is measured too, the yardstick): the largest relative error ‖out - ref‖ / ‖ref‖,
    the share of rows whose argmax agrees, and ``ok``: float32 within 1e-4 with every
    argmax the same; else the mean relative error over the outputs within TOLERANCE or
    twice transformers' own (bfloat16 logits differ by a few percent with the order of
    their sums: the largest is noise, the mean is not). A model
    without the compact forward says why."""
    from inkling.runtime.captured_llama import CapturedLlama
    from inkling.runtime.compact_llama import CompactLlama, refusal
    why = refusal(model)
    if why is not None:
        return {"compact": f"none: {why}", "captured": f"none: {why}"}
    dtype = next(model.parameters()).dtype
    exact = dtype == torch.float32
    truth = model if exact else copy.deepcopy(model).float()
    runs = {"truth": _Reference(truth), "reference": _Reference(model),
            "compact": _Ours(CompactLlama(model)), "captured": _Ours(CapturedLlama(model))}
    if exact:
        del runs["reference"]
    outs = {name: [] for name in runs}
    g = random.Random(0)
    ids = [g.randrange(3, model.config.vocab_size) for _ in range(prompt)]
    token = None                                    # the float32 reference's last argmax
    for stage in _stages(ids, steps, tree, g):
        given = stage(token)
        for name, run in runs.items():
            outs[name].append(run(*given))                            # [n, vocab] float32
        token = int(outs["truth"][-1][-1].argmax())
    out = {name: _errors(outs["truth"], outs[name]) for name in runs if name != "truth"}
    for name in ("compact", "captured"):
        e = out[name]
        e["ok"] = e["finite"] and (e["max_rel_error"] <= 1e-4 and e["argmax_agree"] == 1
                                   if exact else e["mean_rel_error"] <= max(
                                       TOLERANCE[dtype], 2 * out["reference"]["mean_rel_error"]))
    return out


def _stages(ids: list[int], steps: int, tree: int, g: random.Random):
    """The forwards' inputs, stage by stage: functions of the reference's last argmax
    (None for the prompt) -> (ids, parents or None)."""
    yield lambda _: (ids, None)
    for _ in range(steps):
        yield lambda token: ([token], None)
    for _ in range(2):                   # twice: on a GPU the second tree's step replays
        parents = [-1] + [g.randrange(-1, i) for i in range(1, tree)]
        yield lambda token, p=parents: ([token] + [g.randrange(3, 500) for _ in p[1:]], p)
        for _ in range(steps):
            yield lambda token: ([token], None)


def _errors(ref: list[torch.Tensor], got: list[torch.Tensor]) -> dict:
    rel = [float((a - b).norm() / b.norm()) for a, b in zip(got, ref)]
    rows = [bool(x) for a, b in zip(got, ref) for x in a.argmax(-1) == b.argmax(-1)]
    finite = all(bool(torch.isfinite(a).all()) for a in got)
    return {"max_rel_error": max(rel), "mean_rel_error": sum(rel) / len(rel),
            "argmax_agree": sum(rows) / len(rows), "finite": finite}


class _Reference:
    """transformers' forward over its cache (inkling's DynamicKV, as the runtime runs it)."""

    def __init__(self, model):
        from inkling.runtime.dynamic_kv import DynamicKV
        from inkling.runtime.llama_modules import transformers_model
        from inkling.runtime.model_runtime import cache_keyword
        model = transformers_model(model)                 # (inkling's modules: over them)
        self.model, self.kv = model, DynamicKV(model.config)
        self.keyword, self.length = cache_keyword(model), 0

    @torch.inference_mode()
    def __call__(self, ids: list[int], parents: list[int] | None) -> torch.Tensor:
        device = next(self.model.parameters()).device
        positions, mask = _positions_mask(ids, parents, self.length, self.model.dtype)
        out = self.model(input_ids=torch.tensor([ids], device=device),
                         position_ids=positions.to(device),
                         attention_mask=None if mask is None else mask.to(device),
                         use_cache=True, **{self.keyword: self.kv})
        self.length += len(ids)
        return out.logits[0].float()


class _Ours:
    """A compact-family forward (compact or captured) over its own buffers."""

    def __init__(self, forward):
        self.forward = forward
        w = forward.embed.weight
        self.kv = forward.new_buffers(w.dtype, w.device)

    def __call__(self, ids: list[int], parents: list[int] | None) -> torch.Tensor:
        w = self.forward.embed.weight
        positions, mask = _positions_mask(ids, parents, self.kv.length, w.dtype)
        with torch.inference_mode():
            embeds = self.forward.embed(torch.tensor([ids], device=w.device))
        return self.forward.forward(self.kv, embeds, positions.to(w.device),
                                    None if mask is None else mask.to(w.device))[0].float()


def _positions_mask(ids, parents, past: int, dtype):
    """positions [1, n] and the additive mask [1, 1, n, past + n] of a tree (None: causal)."""
    if parents is None:
        return torch.arange(past, past + len(ids))[None], None
    from inkling.cache.tree_mask import tree_mask
    positions, mask = tree_mask(parents, past, dtype)
    return positions[None], mask[None, None]
