"""The replay's HTML report: one self-contained page, plots embedded as PNG data URIs."""
from __future__ import annotations

import base64
import html
import io
import json

from inkling.evaluation import metrics as m
from inkling.evaluation.replay_result import TraceResult, summarise

# matplotlib is imported where a plot is drawn, after render_report has chosen the Agg
# backend (it must be chosen before pyplot is imported); matplotlib.pyplot takes 0.5 s to
# import (-X importtime), which only `inkling replay --report` pays.

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 70em; color: #222; }
table { border-collapse: collapse; margin: 1em 0; }
td, th { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: left; vertical-align: top; }
th { background: #f3f3f3; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.na { color: #999; font-style: italic; }
.bad { color: #b00; }
img { max-width: 100%; }
pre { background: #f6f6f6; padding: 0.8em; overflow-x: auto; }
"""

_METRICS = ("shown", "guard_cut", "guard_emptied",
            "exact_line", "exact_line_any", "edit_similarity", "accepted_chars",
            "latency_ms", "engine_latency_ms", "protocol_overhead_ms",   # the last two: --via-lsp
            "first_token_ms", "edit_latency_ms", "forwards",
            "tokens_per_forward", "tokens_per_forward_n", "draft_throughput",
            "prefill_tokens", "prefill_tokens_typing", "first_token_ms_typing",
            "reused_tokens", "context_tokens",
            "syntax_valid", "syntax_valid_n", "undefined_names", "undefined_names_n",
            "analysis_failures", "identifier_match", "identifier_triggers", "sync_ok", "checks",
            "checks_failed", "model_ms", "total_ms", "completions", "edits")


def _png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=96, bbox_inches="tight")
    import matplotlib.pyplot as plt
    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def _latency_plot(results: list[TraceResult]) -> str:
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.6))
    recs = [r for t in results for r in t.completions]
    top = max([r.latency_ms for r in recs], default=1.0)
    for values, label in (([r.latency_ms for r in recs], "latency"),
                          ([r.first_token_ms for r in recs], "first token")):
        if values:
            axes[0].hist(values, bins=30, range=(0, top), alpha=0.6, label=label)
    axes[0].set(title="completion latency", xlabel="ms", ylabel="completions")
    axes[0].legend()
    edits = [ms for t in results for ms in t.edit_ms]
    if edits:
        axes[1].hist(edits, bins=30, color="tab:green")
    axes[1].set(title="edit latency", xlabel="ms", ylabel="change events")
    return _png(fig)


def _per_trace_plot(results: list[TraceResult], summaries: list[dict]) -> str:
    import matplotlib.pyplot as plt
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


def _tokens_per_forward_plot(results: list[TraceResult]) -> str:
    """The first draft's tokens per forward of each completion that asked for one draft
    (the replay's ``tokens_per_forward``; several drafts decoded together are left out)."""
    import matplotlib.pyplot as plt
    ratios = [r.tokens / r.forwards for t in results for r in t.completions
              if r.forwards and r.asked == 1]
    fig, ax = plt.subplots(figsize=(6, 3.4))
    if ratios:
        ax.hist(ratios, bins=20, color="tab:purple")
    mean = m.mean(ratios)
    title = "tokens per forward, one draft" + (f" (mean {mean:.2f})" if mean is not None else "")
    ax.set(title=title, xlabel="first draft's tokens / forwards", ylabel="completions")
    return _png(fig)


def _cell(value) -> str:
    if value is None:
        return '<td class="na">not measured</td>'
    if isinstance(value, bool):
        return f'<td class="{"" if value else "bad"}">{"yes" if value else "no"}</td>'
    if isinstance(value, dict):
        parts = ", ".join(f"{k} {'–' if v is None else _fmt(v)}" for k, v in value.items())
        return f'<td class="num">{html.escape(parts)}</td>'
    return f'<td class="num">{html.escape(_fmt(value))}</td>'


def _fmt(value) -> str:
    if isinstance(value, float):
        return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.4g}"
    return str(value)


def _metrics_table(summary: dict) -> str:
    rows = "".join(f"<tr><th>{k}</th>{_cell(summary.get(k))}</tr>" for k in _METRICS
                   if k in summary)
    return f"<table>{rows}</table>"


def _per_trace_table(results: list[TraceResult], summaries: list[dict]) -> str:
    keys = ("completions", "shown", "guard_cut", "guard_emptied", "exact_line",
            "edit_similarity", "syntax_valid", "syntax_valid_n", "undefined_names",
            "undefined_names_n", "identifier_match", "sync_ok")
    head = "<tr><th>trace</th>" + "".join(f"<th>{k}</th>" for k in keys) + \
        "<th>accepted chars</th><th>latency p50 / p95 ms</th></tr>"
    rows = []
    for t, s in zip(results, summaries):
        lat = s["latency_ms"]
        lat_text = f"{lat['p50']:.1f} / {lat['p95']:.1f}" if lat else "–"
        rows.append(f"<tr><td>{html.escape(t.name or '')}<br><small>{html.escape(t.source)}"
                    f"</small></td>" + "".join(_cell(s[k]) for k in keys) +
                    _cell(s["accepted_chars"]["fraction"]) +
                    f'<td class="num">{lat_text}</td></tr>')
    return f"<table>{head}{''.join(rows)}</table>"


def _errors(summary: dict) -> str:
    if not summary["errors"]:
        return "<p>Every check matched; no trace stopped early.</p>"
    items = "".join(f'<li class="bad">{html.escape(e)}</li>' for e in summary["errors"])
    return f"<ul>{items}</ul>"


def _first(report: dict) -> str:
    runs = report.get("runs") or []
    return f" ({html.escape(_run_label(runs[0]))})" if len(runs) > 1 else ""


def _run_label(run: dict) -> str:
    return ", ".join(f"{k}={str(v).lower() if isinstance(v, bool) else v}"
                     for k, v in run["settings"].items()) or "as given"


def _ratio(value, base) -> str:
    """``value`` / ``base`` for a scalar metric (p50 for a distribution); '' when none."""
    if isinstance(value, dict):
        value, base = value.get("p50", value.get("fraction")), (base or {}).get(
            "p50", (base or {}).get("fraction"))
    if isinstance(value, bool) or not isinstance(value, (int, float)) or \
            not isinstance(base, (int, float)) or isinstance(base, bool) or not base:
        return ""
    return f"<br><small>x{value / base:.2f}</small>"


def _comparison_table(runs: list[dict]) -> str:
    head = "<tr><th>metric</th>" + "".join(
        f"<th>{html.escape(_run_label(r))}</th>" for r in runs) + "</tr>"
    rows = []
    for k in (k for k in _METRICS if k in runs[0]):
        cells = []
        for i, r in enumerate(runs):
            cell = _cell(r.get(k))
            if i:
                cell = cell.replace("</td>", _ratio(r.get(k), runs[0].get(k)) + "</td>")
            cells.append(cell)
        rows.append(f"<tr><th>{k}</th>{''.join(cells)}</tr>")
    return f"<table>{head}{''.join(rows)}</table>"


def _comparison_latency_plot(runs: list[dict], all_results: list[list[TraceResult]]) -> str:
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(11, 3.6))
    values = [[r.latency_ms for t in results for r in t.completions] for results in all_results]
    top = max((v for vs in values for v in vs), default=1.0)
    for run, vs in zip(runs, values):
        if vs:
            ax.hist(vs, bins=40, range=(0, top), alpha=0.45, label=_run_label(run),
                    histtype="stepfilled")
    ax.set(title="completion latency, each combination", xlabel="ms", ylabel="completions")
    ax.legend(fontsize="small")
    return _png(fig)


def _comparison_per_trace_plot(runs: list[dict]) -> str:
    import matplotlib.pyplot as plt
    traces = list(runs[0]["per_trace"])
    fig, ax = plt.subplots(figsize=(11, 0.35 * len(traces) * len(runs) + 1.5))
    height = 0.8 / len(runs)
    for i, run in enumerate(runs):
        exact = [(run["per_trace"].get(t) or {}).get("exact_line") or 0.0 for t in traces]
        ax.barh([y - 0.4 + (i + 0.5) * height for y in range(len(traces))], exact,
                height=height, label=_run_label(run))
    ax.set_yticks(list(range(len(traces))), [runs[0]["per_trace"][t]["name"] or t
                                             for t in traces])
    ax.invert_yaxis()
    ax.set(xlim=(0, 1), title="exact_line per trace, each combination")
    ax.legend(loc="lower right", fontsize="small")
    return _png(fig)


def _comparison(report: dict, all_results) -> str:
    runs = report.get("runs") or []
    if len(runs) < 2 or all_results is None:
        return ""
    return ("<h2>Comparison</h2><p>Every combination replayed the same traces, interleaved "
            "trace by trace; ratios are to the first combination (p50 for distributions)."
            f"</p>{_comparison_table(runs)}"
            f'<img alt="latency" src="{_comparison_latency_plot(runs, all_results)}">'
            f'<img alt="per trace" src="{_comparison_per_trace_plot(runs)}">')


def _context_sample(all_results: list[list[TraceResult]]) -> str:
    """The repository-context block of one completion (the largest of the first run that
    has any), with where it was asked and what came back."""
    for results in all_results:
        recs = [(t, r) for t in results for r in t.completions if r.context_tokens]
        if not recs:
            continue
        t, r = max(recs, key=lambda tr: tr[1].context_tokens)
        return ("<h2>Context block (a sample completion)</h2>"
                f"<p>{html.escape(t.name or t.source)}, trace line {r.line}, {html.escape(r.path)}:"
                f" {r.context_tokens} context tokens before the fill-in-the-middle prompt. "
                f"Expected <code>{html.escape(m.first_line(r.expected))}</code>, first draft "
                f"<code>{html.escape(m.first_line(r.first))}</code>.</p>"
                f"<pre>{html.escape(r.context_text)}</pre>")
    return ""


PLOTS_MISSING = ("the report's plots need matplotlib, which this install lacks: "
                 "pip install 'inkling[report]'")


def plots_available() -> bool:
    """Whether matplotlib is installed (the `report` extra); without it the report has no plots."""
    import importlib.util
    return importlib.util.find_spec("matplotlib") is not None


def _figures(results: list[TraceResult], summaries: list[dict]) -> str:
    import matplotlib
    matplotlib.use("Agg")
    plots = [("Latency", _latency_plot(results)),
             ("Per trace", _per_trace_plot(results, summaries)),
             ("Tokens per forward", _tokens_per_forward_plot(results))]
    return "".join(f'<h2>{title}</h2><img alt="{title}" src="{uri}">' for title, uri in plots)


def render_report(results: list[TraceResult], report: dict,
                  all_results: list[list[TraceResult]] | None = None) -> str:
    """The HTML page for ``report`` (the replay's JSON object) and the traces behind it;
    with ``--compare``, ``all_results`` holds every combination's and a comparison
    section leads the page (the rest describes the first combination)."""
    summaries = [summarise([t]) for t in results]
    figures = _figures(results, summaries) if plots_available() else (
        f"<p>{html.escape(PLOTS_MISSING)}</p>")
    config = html.escape(json.dumps(report["config"], indent=2))
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>inkling replay</title>"
            f"<style>{_STYLE}</style></head><body><h1>inkling replay</h1>"
            f"<p>{report['traces']} traces, {report['completions']} completions, "
            f"{report['edits']} edits.</p>{_comparison(report, all_results)}"
            f"<h2>Metrics{_first(report)}</h2>{_metrics_table(report)}<h2>Problems</h2>{_errors(report)}"
            f"{figures}{_context_sample(all_results or [results])}"
            f"<h2>Traces</h2>{_per_trace_table(results, summaries)}"
            f"<h2>Configuration</h2><pre>{config}</pre></body></html>\n")
