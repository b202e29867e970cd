"""What a decoding step (masks, forward, walk) costs by its forward's rows, averaged as decoding
runs: a draft pays where its 1 + accepted tokens outgrow its step's cost in one-row steps, which
a CPU's rows are not free of (docs/decisions/drafting-by-device.md)."""
from __future__ import annotations

from dataclasses import dataclass, field

BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128)


def bucket(rows: int) -> int:
    """The smallest bucket holding ``rows`` (the largest for more)."""
    for b in BUCKETS:
        if rows <= b:
            return b
    return BUCKETS[-1]


@dataclass
class VerifyCost:
    weight: float = 0.1                                     # weight of the newest step
    ms: dict[int, float] = field(default_factory=dict)      # bucket -> average step ms
    arms: dict[str, tuple[float, float]] = field(default_factory=dict)
    arm_weight: float = 0.05

    def record(self, rows: int, ms: float, tokens: int | None = None,
               search_ms: float | None = None) -> None:
        """A step of ``rows`` rows took ``ms``, yielding ``tokens`` after a search of ``search_ms``
        (None: none); ``arms``: (ms with search, tokens) a step, "drafted" or "plain"."""
        b = bucket(rows)
        old = self.ms.get(b)
        self.ms[b] = ms if old is None else old + self.weight * (ms - old)
        if tokens is None:
            return
        arm, total = ("plain", ms) if search_ms is None else ("drafted", ms + search_ms)
        was = self.arms.get(arm)
        w = self.arm_weight
        self.arms[arm] = (total, tokens) if was is None else \
            (was[0] + w * (total - was[0]), was[1] + w * (tokens - was[1]))

    def per_token(self, arm: str) -> float | None:
        """ms a token in steps of ``arm`` ("drafted" or "plain"), None until measured."""
        was = self.arms.get(arm)
        return None if was is None or was[1] <= 0 else was[0] / was[1]

    def drafting_pays(self) -> bool:
        """Whether drafted steps, searches included, yield tokens as cheaply as plain ones (True
        until both are measured)."""
        drafted, plain = self.per_token("drafted"), self.per_token("plain")
        return drafted is None or plain is None or drafted <= plain

    def plain_ms(self) -> float | None:
        """What a one-row step costs (a token without drafting); None until measured."""
        return self.ms.get(1)

    def ratio(self, rows: int) -> float:
        """Step ms of ``rows`` rows over one row's; 1 until measured, so that drafts get tried."""
        one, many = self.ms.get(1), self.ms.get(bucket(rows))
        if one is None or many is None or one <= 0:
            return 1.0
        return max(1.0, many / one)

    def rows_that_pay(self, tokens: float) -> int:
        """The most rows a step may run to yield ``tokens`` as fast as one-row steps: the largest
        bucket whose ratio (unmeasured: the largest measured below's) is at most ``tokens``."""
        best, known = 1, 1.0
        for b in BUCKETS[1:]:
            if b in self.ms:
                known = self.ratio(b)
            if known <= tokens:
                best = b
        return best
