"""What more tokens would give: a least-squares line of held-out loss against ln(tokens),
fitted to the last run's evaluations from its highest loss on (a climb after a corpus switch or
warm-up says nothing about tokens) while the rate stays within ``STABLE_RATE`` of its peak (an
anneal gains more than tokens alone).

    L(T) = a - b ln T         b: nats gained per e-fold of tokens"""
from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

MIN_POINTS = 4
STABLE_RATE = 0.9         # a rate under this share of the run's highest: the anneal


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
        """Tokens over all runs at which the line reaches ``loss``; None when b <= 0."""
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
    """The evaluations without a rate or at ``STABLE_RATE`` of the highest rate or more."""
    rates = [e.lr for e in evaluations if e.lr is not None]
    if not rates:
        return evaluations
    floor = STABLE_RATE * max(rates)
    return [e for e in evaluations if e.lr is None or e.lr >= floor]


def fit_trend(evaluations: list[tuple], column: str) -> LossTrend | None:
    """The line through the last run's stable-rate evaluations from its highest loss on; None
    under ``MIN_POINTS``. ``evaluations``: ``Evaluation``s or (run, tokens, loss[, rate])."""
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
