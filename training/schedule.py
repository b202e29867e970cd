"""The learning-rate schedule: linear warm-up, then cosine decay to a floor over the budget.

A function of the step alone, so a resumed run takes exactly the steps it would have taken. A
budget change at step ``s`` (``--steps``, ``--cooldown``) starts a new half-cosine segment from
the rate in force to the floor, so the rate never jumps.

    lr(s) = peak * (s + 1) / warmup                                   for s < warmup
    lr(s) = floor + (lr0 - floor) * (1 + cos(pi * (s - a) / (b - a))) / 2   for a <= s < b
    lr(s) = floor                                                      for s >= b (last segment)

where (a, lr0, b) is the last segment with a <= s; the first is (warmup, peak, steps).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field


@dataclass
class Schedule:
    peak: float
    floor: float
    warmup: int
    segments: list[list[float]] = field(default_factory=list)   # [start, lr0, end]

    @classmethod
    def new(cls, peak: float, min_lr_ratio: float, warmup: int, total: int) -> "Schedule":
        return cls(peak, peak * min_lr_ratio, warmup, [[warmup, peak, max(total, warmup)]])

    @property
    def total(self) -> int:
        return int(self.segments[-1][2])

    def lr(self, step: int) -> float:
        if step < self.warmup:
            return self.peak * (step + 1) / self.warmup
        seg = self.segments[0]
        for s in self.segments:
            if s[0] <= step:
                seg = s
        a, lr0, b = seg
        if step >= b:
            return self.floor
        t = (step - a) / max(1, b - a)
        return self.floor + (lr0 - self.floor) * 0.5 * (1 + math.cos(math.pi * t))

    def set_total(self, step: int, total: int) -> None:
        """Change the budget at ``step`` (the next step to run) to ``total`` steps."""
        total = max(total, step)
        if total == self.total:
            return
        if step <= self.warmup:
            self.segments = [[self.warmup, self.peak, max(total, self.warmup)]]
            return
        self.segments = [s for s in self.segments if s[0] < step]
        self.segments.append([step, self.lr(step), total])

    def state(self) -> dict:
        return {"peak": self.peak, "floor": self.floor, "warmup": self.warmup,
                "segments": [list(s) for s in self.segments]}

    @classmethod
    def from_state(cls, d: dict) -> "Schedule":
        return cls(d["peak"], d["floor"], d["warmup"], [list(s) for s in d["segments"]])
