"""What a decoding step costs by the rows of its forward, measured as decoding runs.

A step is everything from the drafter's answer to the next drafter call: the monitor's
masks over the tree, the forward, the walk of the verified tree and the cache keeping
the accepted path (the drafter's own search is measured apart, per source:
``AcceptanceMeter.search_ms``). On a GPU a forward of 32 rows costs about what one row
costs; on a CPU it does not, and the Python around a forward is a larger share of a
cheap one: with the bundled model's native forward on this 2-core CPU a step of 8 rows
costs about twice a one-row step (benchmarks/README.md). Drafting pays when the tokens
a draft is expected to yield, 1 + accepted, outgrow that ratio, so the ratio is
measured here, per row bucket, as an exponential average of step times, rather than
assumed.
"""
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
    # "drafted" (steps after a search) / "plain" -> (ms a step, its search included;
    # tokens a step), each averaged with ``arm_weight``
    arms: dict[str, tuple[float, float]] = field(default_factory=dict)
    arm_weight: float = 0.05

    def record(self, rows: int, ms: float, tokens: int | None = None,
               search_ms: float | None = None) -> None:
        """A step whose forward ran ``rows`` rows took ``ms`` (its search apart); with
        ``tokens``, what it yielded, and ``search_ms`` what the drafter's search before it
        took (None: the step did not search)."""
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
        """Whether steps after a search yield tokens at least as cheaply as plain steps,
        searches, masks and walks included (True until both are measured)."""
        drafted, plain = self.per_token("drafted"), self.per_token("plain")
        return drafted is None or plain is None or drafted <= plain

    def plain_ms(self) -> float | None:
        """What a one-row step costs (a token without drafting); None until measured."""
        return self.ms.get(1)

    def ratio(self, rows: int) -> float:
        """Step time of ``rows`` rows over that of one row; 1 until both are measured
        (a flat cost: drafts are tried, and measured)."""
        one, many = self.ms.get(1), self.ms.get(bucket(rows))
        if one is None or many is None or one <= 0:
            return 1.0
        return max(1.0, many / one)

    def rows_that_pay(self, tokens: float) -> int:
        """The most rows a step may run to yield ``tokens`` at least as fast as one-row
        steps: the largest bucket whose ratio is at most ``tokens``, 1 when none. A
        bucket not measured yet counts at the ratio of the largest measured one below it
        (a cost never falls with rows), so it is tried where that one pays."""
        best, known = 1, 1.0
        for b in BUCKETS[1:]:
            if b in self.ms:
                known = self.ratio(b)
            if known <= tokens:
                best = b
        return best
