"""The Llama family's weights (Llama, Mistral, Qwen2) held in plain modules of inkling's own,
named and shaped as their checkpoints and transformers' classes name them.

The native and compact forwards read these modules directly, so a start never imports
transformers' modelling code (about a tenth of a gigabyte and seconds of a fresh process,
docs/decisions/llama-modules.md); calling the model runs transformers' own forward, built on
first use over these very modules (the reference forward, ``generate``, the tests' reference).
Only static rotary scalings are held here: ``checkpoint_reader.Family`` gives the others
transformers' class."""
from __future__ import annotations

import torch
from torch import nn

from inkling.runtime import model_config
from inkling.runtime.errors import ModelError

# model_type -> (q, k, v biases, o bias, MLP biases) from the config, as transformers' classes
BIASES = {
    "llama": lambda c: (bool(c.attention_bias), bool(c.attention_bias), bool(c.mlp_bias)),
    "mistral": lambda c: (False, False, False),
    "qwen2": lambda c: (True, False, False),
}


def head_dim(config) -> int:
    return getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads


class RMSNorm(nn.Module):
    """transformers' Llama / Qwen2 RMSNorm, op for op (float32 inside)."""

    def __init__(self, hidden: int, eps: float):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden))
        self.variance_epsilon = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        dtype = x.dtype
        h = x.to(torch.float32)
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.variance_epsilon)
        return self.weight * h.to(dtype)


class Rotary(nn.Module):
    """The rotary frequencies of a static scaling (default, linear, llama3, yarn, ...), and
    cos, sin at positions as transformers' rotary embedding computes them."""

    def __init__(self, config):
        super().__init__()
        self.config = config
        params = config.rope_parameters
        kind = params.get("rope_type", "default")
        with torch.device("cpu"):                  # the real values, even under a meta device
            if kind == "default":
                dim = head_dim(config)
                steps = torch.arange(0, dim, 2, dtype=torch.float)
                inv_freq = 1.0 / (params["rope_theta"] ** (steps / dim))             # [d/2]
                self.attention_scaling = 1.0
            else:
                from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS  # lazy: rare
                inv_freq, self.attention_scaling = ROPE_INIT_FUNCTIONS[kind](
                    model_config.transformers_config(config))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def forward(self, x: torch.Tensor, position_ids: torch.Tensor
                ) -> tuple[torch.Tensor, torch.Tensor]:
        """position_ids [b, n] -> cos, sin [b, n, d] in x's dtype."""
        freqs = position_ids[..., None].float() * self.inv_freq.to(x.device, torch.float)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos() * self.attention_scaling, emb.sin() * self.attention_scaling
        return cos.to(x.dtype), sin.to(x.dtype)


class Attention(nn.Module):
    def __init__(self, config, qkv_bias: bool, o_bias: bool):
        super().__init__()
        d, hidden = head_dim(config), config.hidden_size
        heads = config.num_attention_heads
        kv_heads = getattr(config, "num_key_value_heads", None) or heads
        self.scaling = d ** -0.5
        self.q_proj = nn.Linear(hidden, heads * d, bias=qkv_bias)
        self.k_proj = nn.Linear(hidden, kv_heads * d, bias=qkv_bias)
        self.v_proj = nn.Linear(hidden, kv_heads * d, bias=qkv_bias)
        self.o_proj = nn.Linear(heads * d, hidden, bias=o_bias)


class MLP(nn.Module):
    def __init__(self, config, bias: bool):
        super().__init__()
        hidden, inner = config.hidden_size, config.intermediate_size
        self.gate_proj = nn.Linear(hidden, inner, bias=bias)
        self.up_proj = nn.Linear(hidden, inner, bias=bias)
        self.down_proj = nn.Linear(inner, hidden, bias=bias)


class Block(nn.Module):
    def __init__(self, config, biases: tuple[bool, bool, bool]):
        super().__init__()
        self.input_layernorm = RMSNorm(config.hidden_size, config.rms_norm_eps)
        self.self_attn = Attention(config, biases[0], biases[1])
        self.post_attention_layernorm = RMSNorm(config.hidden_size, config.rms_norm_eps)
        self.mlp = MLP(config, biases[2])


class Body(nn.Module):
    def __init__(self, config):
        super().__init__()
        biases = BIASES[config.model_type](config)
        self.embed_tokens = nn.Embedding(   # (given its weight: no init, read from the file)
            config.vocab_size, config.hidden_size, getattr(config, "pad_token_id", None),
            _weight=torch.empty(config.vocab_size, config.hidden_size))
        self.layers = nn.ModuleList(Block(config, biases)
                                    for _ in range(config.num_hidden_layers))
        self.norm = RMSNorm(config.hidden_size, config.rms_norm_eps)
        self.rotary_emb = Rotary(config)


class LlamaModules(nn.Module):
    """A causal LM's weights as ``model`` (the body) and ``lm_head``; its ``family``
    (``checkpoint_reader.Family``) builds transformers' model over them when it is called
    (``reference``)."""

    def __init__(self, config, family):
        super().__init__()
        self.config = config
        self.model = Body(config)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        # not a submodule: the same weights, and no second walk over them
        self.__dict__["_transformers"] = (family, None)

    @property
    def all_tied_weights_keys(self) -> dict[str, str]:
        """target -> source, as transformers' classes state their tied weights."""
        tied = getattr(self.config, "tie_word_embeddings", False)
        return {"lm_head.weight": "model.embed_tokens.weight"} if tied else {}

    def tie_weights(self) -> None:
        if self.all_tied_weights_keys:
            self.lm_head.weight = self.model.embed_tokens.weight

    def get_input_embeddings(self) -> nn.Module:
        return self.model.embed_tokens

    def get_output_embeddings(self) -> nn.Module:
        return self.lm_head

    def reference(self) -> nn.Module:
        """transformers' model of this family over these modules (built once, on first use:
        its modelling code is imported then); ModelError where the weights are int8 panels
        only."""
        family, built = self.__dict__["_transformers"]
        if built is None:
            built = over_modules(self, family)
            self.__dict__["_transformers"] = (family, built)
        return built

    def forward(self, *args, **kwargs):
        """transformers' forward (``reference``): the same arguments and outputs."""
        return self.reference()(*args, **kwargs)

    def generate(self, *args, **kwargs):
        return self.reference().generate(*args, **kwargs)


def transformers_model(model: nn.Module) -> nn.Module:
    """transformers' own model over ``model``'s weights: built for inkling's modules, any
    other model as it is."""
    return model.reference() if isinstance(model, LlamaModules) else model


def over_modules(held: LlamaModules, family) -> nn.Module:
    """``family``'s transformers model at ``held``'s config with ``held``'s modules in place of
    its own (on the meta device until then), so the two share every weight, however the CPU
    layout packed them."""
    if any(p.is_meta for p in held.parameters()):          # int8 panels only
        raise ModelError(f"model {held.config._name_or_path}: its weights are the native "
                         "forward's int8 panels only (model.weights float for transformers')")
    cls = family.transformers_class()
    config = model_config.transformers_config(held.config)
    config._attn_implementation = "sdpa"
    with torch.device("meta"):
        model = cls(config)
    for name, module in held.named_modules():
        if name and not list(module.children()):             # a leaf: a layer's weights
            model.set_submodule(name, module)
    left = [n for n, t in (*model.named_parameters(), *model.named_buffers()) if t.is_meta]
    if left:
        raise ModelError(f"{cls.__name__} has weights inkling's modules lack: {left[0]}")
    from inkling.runtime.gqa_attention import use_packed_gqa  # lazy: transformers' modelling
    use_packed_gqa(model)
    return model.train(held.training)
