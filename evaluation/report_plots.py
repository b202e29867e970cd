"""The replay report's plots, each a PNG data URI (matplotlib on the Agg backend).

Imported only where a plot is drawn, since matplotlib.pyplot is slow to import."""
from __future__ import annotations

import base64
import io

import matplotlib

matplotlib.use("Agg")                   # chosen before pyplot is imported: no display
import matplotlib.pyplot as plt  # noqa: E402

from inkling.evaluation import metrics as m  # noqa: E402
from inkling.evaluation.comparison import label  # noqa: E402
from inkling.evaluation.replay_result import TraceResult  # noqa: E402


def _png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=96, bbox_inches="tight")
    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def latency_plot(results: list[TraceResult]) -> str:
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.6))
    recs = [r for t in results for r in t.completions]
    top = max([r.latency_ms for r in recs], default=1.0)
    for values, name in (([r.latency_ms for r in recs], "latency"),
                         ([r.first_token_ms for r in recs], "first token")):
        if values:
            axes[0].hist(values, bins=30, range=(0, top), alpha=0.6, label=name)
    axes[0].set(title="completion latency", xlabel="ms", ylabel="completions")
    axes[0].legend()
    edits = [ms for t in results for ms in t.edit_ms]
    if edits:
        axes[1].hist(edits, bins=30, color="tab:green")
    axes[1].set(title="edit latency", xlabel="ms", ylabel="change events")
    return _png(fig)


def per_trace_plot(results: list[TraceResult], summaries: list[dict]) -> str:
    names = [t.name or t.source for t in results]
    exact = [s["exact_line"] or 0.0 for s in summaries]
    accepted = [s["accepted_chars"]["fraction"] or 0.0 for s in summaries]
    fig, ax = plt.subplots(figsize=(11, 0.5 * len(names) + 1.5))
    ys = range(len(names))
    ax.barh([y - 0.2 for y in ys], exact, height=0.4, label="exact_line")
    ax.barh([y + 0.2 for y in ys], accepted, height=0.4, label="accepted chars (fraction)")
    ax.set_yticks(list(ys), names)
    ax.invert_yaxis()
    ax.set(xlim=(0, 1), title="exact match and accepted characters per trace")
    ax.legend(loc="lower right")
    return _png(fig)


def tokens_per_forward_plot(results: list[TraceResult]) -> str:
    """Tokens per forward of each completion that asked for one draft."""
    ratios = [r.tokens / r.forwards for t in results for r in t.completions
              if r.forwards and r.asked == 1]
    fig, ax = plt.subplots(figsize=(6, 3.4))
    if ratios:
        ax.hist(ratios, bins=20, color="tab:purple")
    mean = m.mean(ratios)
    title = "tokens per forward, one draft" + (f" (mean {mean:.2f})" if mean is not None else "")
    ax.set(title=title, xlabel="first draft's tokens / forwards", ylabel="completions")
    return _png(fig)


def comparison_latency_plot(runs: list[dict], all_results: list[list[TraceResult]]) -> str:
    fig, ax = plt.subplots(figsize=(11, 3.6))
    values = [[r.latency_ms for t in results for r in t.completions] for results in all_results]
    top = max((v for vs in values for v in vs), default=1.0)
    for run, vs in zip(runs, values):
        if vs:
            ax.hist(vs, bins=40, range=(0, top), alpha=0.45, label=label(run["settings"]),
                    histtype="stepfilled")
    ax.set(title="completion latency, each combination", xlabel="ms", ylabel="completions")
    ax.legend(fontsize="small")
    return _png(fig)


def comparison_per_trace_plot(runs: list[dict]) -> str:
    traces = list(runs[0]["per_trace"])
    fig, ax = plt.subplots(figsize=(11, 0.35 * len(traces) * len(runs) + 1.5))
    height = 0.8 / len(runs)
    for i, run in enumerate(runs):
        exact = [(run["per_trace"].get(t) or {}).get("exact_line") or 0.0 for t in traces]
        ax.barh([y - 0.4 + (i + 0.5) * height for y in range(len(traces))], exact,
                height=height, label=label(run["settings"]))
    ax.set_yticks(list(range(len(traces))), [runs[0]["per_trace"][t]["name"] or t
                                             for t in traces])
    ax.invert_yaxis()
    ax.set(xlim=(0, 1), title="exact_line per trace, each combination")
    ax.legend(loc="lower right", fontsize="small")
    return _png(fig)
