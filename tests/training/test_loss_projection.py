"""The loss projection the model card quotes: the line through the last run's
evaluations from its peak on, and what it says about more tokens."""
import math

import pytest

from inkling.training.loss_projection import fit_trend, read_evaluations, trend


def _log(tmp_path, rows):
    path = tmp_path / "training_log.tsv"
    lines = ["run\tstep\ttokens\ttokens_total\tloss\tlr\tval_loss\tval_loss_pkg\telapsed_s"]
    for run, total, val, pkg in rows:
        lines.append(f"{run}\t0\t0\t{total}\t\t\t{val}\t{pkg}\t0")
    path.write_text("\n".join(lines) + "\n")
    return path


def test_an_exact_log_line_is_recovered_from_the_peak_on(tmp_path):
    # run 1 is ignored; run 2 climbs to a peak at 2e6 tokens, then follows 9 - 0.3 ln T
    rows = [(1, 1e6, 5.0, ""), (2, 1.5e6, 4.0, ""), (2, 2e6, 9 - 0.3 * math.log(2e6) + 0.5, "")]
    rows += [(2, t, 9 - 0.3 * math.log(t), "") for t in (3e6, 4e6, 6e6, 8e6, 12e6)]
    t = trend(_log(tmp_path, rows), "val_loss")
    assert t.run == 2 and t.points == 6 and t.first_tokens == 2e6 and t.last_tokens == 12e6
    # the peak point sits 0.5 above the line, so only the tail is exact: check the slope
    # against a fit without the peak
    tail = fit_trend([(2, tt, 9 - 0.3 * math.log(tt)) for tt in (3e6, 4e6, 6e6, 8e6, 12e6)],
                     "val_loss")
    assert tail.b == pytest.approx(0.3) and tail.a == pytest.approx(9)
    assert tail.per_doubling == pytest.approx(0.3 * math.log(2))
    assert tail.tokens_for(9 - 0.3 * math.log(50e6)) == pytest.approx(50e6)
    assert tail.loss_at(24e6) == pytest.approx(9 - 0.3 * math.log(24e6))
    assert t.b > 0.3                   # the peak steepens the fitted line


def test_too_few_points_or_a_rising_loss_projects_nothing(tmp_path):
    assert trend(tmp_path / "missing.tsv", "val_loss") is None
    few = _log(tmp_path, [(1, t, 4 - 0.1 * i, "") for i, t in enumerate((1e6, 2e6, 3e6))])
    assert trend(few, "val_loss") is None
    rising = fit_trend([(1, 1e6, 4.0), (1, 2e6, 3.9), (1, 3e6, 3.95), (1, 4e6, 3.97),
                        (1, 5e6, 3.99)], "val_loss")
    # from the peak (the first point) on the line falls; from a later peak it would not
    assert rising is not None
    up = fit_trend([(1, 1e6, 3.0), (1, 2e6, 3.1), (1, 3e6, 3.2), (1, 4e6, 3.3),
                    (1, 5e6, 3.4), (1, 6e6, 3.5)], "val_loss")
    assert up is None                  # the peak is the last point: one point is left


def test_columns_are_read_separately(tmp_path):
    rows = [(1, t, 4.0, 5.0 - 0.1 * i) for i, t in enumerate((1e6, 2e6, 4e6, 8e6))]
    path = _log(tmp_path, rows)
    assert [e.loss for e in read_evaluations(path, "val_loss_pkg")] == pytest.approx(
        [5.0, 4.9, 4.8, 4.7])
    assert trend(path, "val_loss_pkg").per_doubling > 0
    flat = trend(path, "val_loss")                 # a flat loss: a line that never reaches
    assert flat.b == pytest.approx(0) and flat.tokens_for(3.2) is None


def test_an_anneal_is_left_out_of_the_line_and_quoted_apart():
    # a constant rate 3e-4 follows 9 - 0.3 ln T exactly; then the rate anneals and the loss
    # falls 0.2 below the line: the fit is the constant-rate line, the anneal is the final point
    line = [(5, t, 9 - 0.3 * math.log(t), 3e-4) for t in (2e6, 3e6, 4e6, 6e6, 8e6)]
    anneal = [(5, 10e6, 9 - 0.3 * math.log(10e6) - 0.1, 1e-4),
              (5, 12e6, 9 - 0.3 * math.log(12e6) - 0.2, 6e-6)]
    t = fit_trend(line + anneal, "val_loss")
    assert t.points == 5 and t.last_tokens == 8e6 and t.b == pytest.approx(0.3)
    assert t.annealed and t.final_tokens == 12e6
    assert t.loss_at(t.final_tokens) - t.final_loss == pytest.approx(0.2)
    plain = fit_trend(line, "val_loss")
    assert not plain.annealed
