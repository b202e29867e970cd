"""What more tokens would give, read off the loss log: a least-squares line of the held-out
loss against the logarithm of the tokens seen over all runs, fitted to the last run's
evaluations from its highest one on (a run that switches corpus or warms up again first
climbs, then comes back down; the climb says nothing about more tokens), while its learning
rate stays within ``STABLE_RATE`` of the run's highest (an anneal at the end of a budget
drops the loss by more than tokens alone would; the card quotes what it added apart).

    L(T) = a - b ln T         b: nats gained per e-fold of tokens (b ln 2 per doubling)

It is an extrapolation at the run's constant learning rate: the cosine's anneal at the end
of a budget usually gains more, a model this small flattens out sooner. The card quotes it
as such."""
from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

MIN_POINTS = 4
STABLE_RATE = 0.9         # an evaluation at a rate under 0.9 x the run's highest: anneal


class Evaluation(NamedTuple):
    run: int
    tokens: float             # tokens over all runs
    loss: float
    lr: float | None = None   # the learning rate at the evaluation (None: not recorded)


@dataclass(frozen=True)
class LossTrend:
    column: str           # "val_loss" (held-out stdlib) or "val_loss_pkg" (held-out package)
    run: int
    points: int           # evaluations fitted
    first_tokens: float   # tokens over all runs at the first and last fitted evaluation
    last_tokens: float
    last_loss: float      # the last fitted evaluation's loss (what the projection starts from)
    a: float
    b: float
    final_tokens: float = 0.0   # the run's last evaluation, anneal included
    final_loss: float = math.nan

    @property
    def annealed(self) -> bool:
        """Whether the run went on past the fitted evaluations (an anneal)."""
        return self.final_tokens > self.last_tokens

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


def read_evaluations(log: Path, column: str) -> list[Evaluation]:
    """Every evaluation in ``training_log.tsv`` that has ``column``."""
    out = []
    with log.open(newline="") as f:
        for row in csv.DictReader(f, delimiter="\t"):
            value, tokens = row.get(column) or "", row.get("tokens_total") or ""
            lr = row.get("lr") or ""
            if value and tokens:
                out.append(Evaluation(int(row["run"]), float(tokens), float(value),
                                      float(lr) if lr else None))
    return out


def stable_phase(evaluations: list[Evaluation]) -> list[Evaluation]:
    """The evaluations at the run's constant rate: those without a recorded rate, or at a
    rate of at least ``STABLE_RATE`` of the highest recorded."""
    rates = [e.lr for e in evaluations if e.lr is not None]
    if not rates:
        return evaluations
    floor = STABLE_RATE * max(rates)
    return [e for e in evaluations if e.lr is None or e.lr >= floor]


def fit_trend(evaluations: list[tuple], column: str) -> LossTrend | None:
    """The line through the last run's evaluations at its constant rate from its highest
    loss on; None with fewer than ``MIN_POINTS`` of them (or tokens that do not grow).
    ``evaluations``: ``Evaluation``s, or (run, tokens, loss[, rate]) tuples."""
    if not evaluations:
        return None
    evaluations = [Evaluation(*e) for e in evaluations]
    run = evaluations[-1].run
    ours = [e for e in evaluations if e.run == run and e.tokens > 0]
    pts = [(e.tokens, e.loss) for e in stable_phase(ours)]
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
                     a=my - slope * mx, b=-slope, final_tokens=ours[-1].tokens,
                     final_loss=ours[-1].loss)


def trend(log: Path, column: str) -> LossTrend | None:
    """``fit_trend`` over ``log`` (None when the file is missing)."""
    if not log.is_file():
        return None
    return fit_trend(read_evaluations(log, column), column)
