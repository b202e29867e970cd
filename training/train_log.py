"""The loss log of ``inkling train`` (``training_log.tsv``: a row a step, and the
evaluations, over every run that led to a model) and its curve (``loss_curve.png``)."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np

LOG_HEADER = ("run", "step", "tokens", "tokens_total", "loss", "lr", "val_loss", "val_loss_pkg",
              "elapsed_s")


def read_log(path: Path) -> list[dict]:
    if not path.is_file():
        return []
    lines = path.read_text().splitlines()
    if not lines:
        return []
    head = lines[0].split("\t")
    rows = []
    for line in lines[1:]:
        vals = line.split("\t")
        row = {}
        for k, v in zip(head, vals):
            row[k] = None if v == "" else float(v) if k in ("loss", "lr", "val_loss",
                                                           "val_loss_pkg", "elapsed_s") else int(v)
        rows.append(row)
    return rows


def prior_log(folder: Path, prior: dict) -> list[dict]:
    """The log of the model continued from, in the cumulative form."""
    rows = read_log(folder / "training_log.tsv")
    if rows and "run" not in rows[0]:
        run = max(1, len(prior.get("runs", [])))
        offset = prior.get("tokens_total", 0) - prior.get("tokens_seen", 0)
        rows = [{"run": run, "step": r["step"], "tokens": r["tokens"],
                 "tokens_total": r["tokens"] + offset, "loss": r["loss"], "lr": r["lr"],
                 "val_loss": r.get("val_loss"), "val_loss_pkg": None,
                 "elapsed_s": r.get("elapsed_s")} for r in rows]
    return rows


def fill_missing_runs(log_rows: list[dict], runs: list[dict]) -> list[dict]:
    """An end-of-run row for each earlier run the log lacks, so the curve shows every run."""
    have = {r.get("run") for r in log_rows}
    rows, tokens = [], 0
    for i, r in enumerate(runs, 1):
        tokens += r.get("tokens") or 0
        if i not in have and r.get("validation_loss") is not None:
            rows.append({"run": i, "step": r.get("steps"), "tokens": r.get("tokens"),
                         "tokens_total": tokens, "loss": None, "lr": None,
                         "val_loss": r["validation_loss"], "val_loss_pkg": None,
                         "elapsed_s": None})
    return sorted(rows + log_rows, key=lambda r: (r["run"], r["step"] or 0))


def _fmt(v) -> str:
    return "" if v is None else f"{v:.5g}" if isinstance(v, float) else str(v)


def write_log(path: Path, rows: list[dict]) -> None:
    tmp = path.with_suffix(".tmp")
    with tmp.open("w") as f:
        f.write("\t".join(LOG_HEADER) + "\n")
        for r in rows:
            f.write("\t".join(_fmt(r.get(k)) for k in LOG_HEADER) + "\n")
    os.replace(tmp, path)


def plot_log(log_rows: list[dict], path: Path) -> None:
    """Each run's training loss (faint, and its mean over 50 steps) and the validation
    losses against the tokens seen over all runs."""
    # matplotlib is the optional `train` extra; Agg is chosen before pyplot loads
    import matplotlib  # lazy: matplotlib.pyplot is slow to import
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # lazy: after the backend, as above
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for run in sorted({r.get("run", 1) for r in log_rows}):
        _plot_run(ax, [r for r in log_rows if r.get("run", 1) == run and r.get("loss") is not None],
                  run)
    val = [(r.get("tokens_total", r.get("tokens")) / 1e6, r["val_loss"]) for r in log_rows
           if r.get("val_loss") is not None]
    if val:
        ax.plot(*zip(*val), "o-", ms=3, color="black", label="validation (held-out stdlib)")
    pkg = [(r["tokens_total"] / 1e6, r["val_loss_pkg"]) for r in log_rows
           if r.get("val_loss_pkg") is not None]
    if pkg:
        ax.plot(*zip(*pkg), "s--", ms=3, color="tab:red", label="held-out package (toolz)")
    ax.set_xlabel("tokens seen, all runs (M)")
    ax.set_ylabel("cross entropy (nats/token)")
    ax.set_title("inkling-tiny training, all runs")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _plot_run(ax, rr: list[dict], run: int) -> None:
    """One run's training loss: every step, faint, and its running mean of 50 steps."""
    if not rr:
        return
    x = [r.get("tokens_total", r.get("tokens")) / 1e6 for r in rr]
    y = np.array([r["loss"] for r in rr])
    line, = ax.plot(x, y, lw=0.5, alpha=0.35)
    k = min(50, len(y))
    smooth = np.convolve(y, np.ones(k) / k, mode="valid")
    ax.plot(x[k - 1:], smooth, lw=1.4, color=line.get_color(),
            label=f"run {run} training loss (mean of {k} steps)")
