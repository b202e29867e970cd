"""What a verification forward costs by its number of rows, measured as decoding runs.

On a GPU a forward of 32 rows costs about what one row costs; on a CPU it does not (on
the bundled model and two cores: 2 rows about 1.4 times one row, 8 rows about 2 times,
32 rows about 2.4 times). Drafting pays when the tokens a draft is expected to yield,
1 + accepted, outgrow that ratio, so the ratio is measured here, per row bucket, as an
exponential average of forward times, rather than assumed.
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
    weight: float = 0.1                                     # weight of the newest forward
    ms: dict[int, float] = field(default_factory=dict)      # bucket -> average forward ms
    mean: float | None = None                               # average forward ms, any size

    def record(self, rows: int, ms: float) -> None:
        b = bucket(rows)
        old = self.ms.get(b)
        self.ms[b] = ms if old is None else old + self.weight * (ms - old)
        self.mean = ms if self.mean is None else self.mean + self.weight * (ms - self.mean)

    def ratio(self, rows: int) -> float:
        """Forward time of ``rows`` rows over that of one row; 1 until both are measured
        (a flat cost: drafts are tried, and measured)."""
        one, many = self.ms.get(1), self.ms.get(bucket(rows))
        if one is None or many is None or one <= 0:
            return 1.0
        return max(1.0, many / one)
