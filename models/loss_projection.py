"""What more tokens would give, read off the loss log: a least-squares line of the held-out
loss against the logarithm of the tokens seen over all runs, fitted to the last run's
evaluations from its highest one on (a run that switches corpus first climbs, then comes
back down; the climb says nothing about more tokens).

    L(T) = a - b ln T         b: nats gained per e-fold of tokens (b ln 2 per doubling)

It is an extrapolation at the run's constant learning rate: the cosine's anneal at the end
of a budget usually gains more, a model this small flattens out sooner. The card quotes it
as such."""
from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path

MIN_POINTS = 4


@dataclass(frozen=True)
class LossTrend:
    column: str           # "val_loss" (held-out stdlib) or "val_loss_pkg" (held-out package)
    run: int
    points: int           # evaluations fitted
    first_tokens: float   # tokens over all runs at the first and last fitted evaluation
    last_tokens: float
    last_loss: float      # the last evaluation's loss (what the projection starts from)
    a: float
    b: float

    @property
    def per_doubling(self) -> float:
        """Nats the held-out loss falls per doubling of the tokens seen."""
        return self.b * math.log(2)

    def loss_at(self, tokens: float) -> float:
        return self.a - self.b * math.log(tokens)

    def tokens_for(self, loss: float) -> float | None:
        """Tokens over all runs at which the line reaches ``loss``; None when it does not
        fall (b <= 0)."""
        if self.b <= 0:
            return None
        return math.exp((self.a - loss) / self.b)


def read_evaluations(log: Path, column: str) -> list[tuple[int, float, float]]:
    """(run, tokens over all runs, loss) of every evaluation in ``training_log.tsv`` that
    has ``column``."""
    out = []
    with log.open(newline="") as f:
        for row in csv.DictReader(f, delimiter="\t"):
            value, tokens = row.get(column) or "", row.get("tokens_total") or ""
            if value and tokens:
                out.append((int(row["run"]), float(tokens), float(value)))
    return out


def fit_trend(evaluations: list[tuple[int, float, float]], column: str) -> LossTrend | None:
    """The line through the last run's evaluations from its highest loss on; None with
    fewer than ``MIN_POINTS`` of them (or tokens that do not grow)."""
    if not evaluations:
        return None
    run = evaluations[-1][0]
    pts = [(t, v) for r, t, v in evaluations if r == run and t > 0]
    if not pts:
        return None
    peak = max(range(len(pts)), key=lambda i: pts[i][1])
    pts = pts[peak:]
    if len(pts) < MIN_POINTS:
        return None
    xs = [math.log(t) for t, _ in pts]
    ys = [v for _, v in pts]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx <= 0:
        return None
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx     # dL / d ln T
    return LossTrend(column, run, len(pts), pts[0][0], pts[-1][0], ys[-1],
                     a=my - slope * mx, b=-slope)


def trend(log: Path, column: str) -> LossTrend | None:
    """``fit_trend`` over ``log`` (None when the file is missing)."""
    if not log.is_file():
        return None
    return fit_trend(read_evaluations(log, column), column)
