"""Re-rotation of cached keys when their tokens move (Positional Integrity Encoding): a key
moved by d positions is rotated by R(d) in float32, with cos and sin from the model's own rotary
module and its ``attention_scaling`` divided out (a YaRN factor would otherwise compound)."""
from __future__ import annotations

import torch

from inkling.runtime.rotary import UNSUPPORTED_ROPE, UnsupportedRope, rope_type

def rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def find_rotary(model: torch.nn.Module) -> torch.nn.Module:
    for name, module in model.named_modules():
        if name.endswith("rotary_emb") and hasattr(module, "inv_freq"):
            return module
    raise UnsupportedRope(f"{type(model).__name__} has no rotary embedding module")


class RopeRotator:
    """Rotates cached keys [batch, kv_heads, seq, head_dim] by a position change."""

    def __init__(self, model: torch.nn.Module):
        kind = rope_type(model.config)
        if kind in UNSUPPORTED_ROPE:
            raise UnsupportedRope(f"rotary scaling {kind!r} cannot be re-rotated: "
                                  f"{UNSUPPORTED_ROPE[kind]}")
        self.rotary = find_rotary(model)
        self.scaling = float(getattr(self.rotary, "attention_scaling", 1.0) or 1.0)
        self.rotary_dim = 2 * self.rotary.inv_freq.shape[-1]
        self.device = self.rotary.inv_freq.device
        self._cos_sin: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}

    def cos_sin(self, delta: int) -> tuple[torch.Tensor, torch.Tensor]:
        """cos, sin for a shift by ``delta`` positions: each [rotary_dim], float32."""
        if delta in self._cos_sin:
            return self._cos_sin[delta]
        if len(self._cos_sin) > 1024:
            self._cos_sin.clear()
        self._cos_sin[delta] = self._compute(delta)
        return self._cos_sin[delta]

    def _compute(self, delta: int) -> tuple[torch.Tensor, torch.Tensor]:
        pos = torch.tensor([[delta]], device=self.device)
        dummy = torch.zeros(1, dtype=torch.float32, device=self.device)
        cos, sin = self.rotary(dummy, pos)                     # [1, 1, rotary_dim]
        return cos[0, 0].float() / self.scaling, sin[0, 0].float() / self.scaling

    def rotate(self, keys: torch.Tensor, delta: int) -> torch.Tensor:
        """keys: [batch, kv_heads, seq, head_dim] -> the same keys ``delta`` positions later."""
        if delta == 0:
            return keys
        cos, sin = self.cos_sin(delta)
        k = keys.float()
        rot, rest = k[..., :self.rotary_dim], k[..., self.rotary_dim:]
        rot = rot * cos + rotate_half(rot) * sin
        if rest.shape[-1]:
            rot = torch.cat((rot, rest), dim=-1)
        return rot.to(keys.dtype)
