"""The replay's HTML report: one self-contained page, plots embedded as PNG data URIs."""
from __future__ import annotations

import html
import importlib.util
import json

from inkling.evaluation import metrics as m
from inkling.evaluation.comparison import label
from inkling.evaluation.replay_result import TraceResult, summarise

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
    return f" ({html.escape(label(runs[0]['settings']))})" if len(runs) > 1 else ""


def _ratio(value, base) -> str:
    """``value`` / ``base`` for a scalar metric (the median for a distribution); '' when none."""
    if isinstance(value, dict):
        value, base = value.get("p50", value.get("fraction")), (base or {}).get(
            "p50", (base or {}).get("fraction"))
    if isinstance(value, bool) or not isinstance(value, (int, float)) or \
            not isinstance(base, (int, float)) or isinstance(base, bool) or not base:
        return ""
    return f"<br><small>x{value / base:.2f}</small>"


def _comparison_table(runs: list[dict]) -> str:
    head = "<tr><th>metric</th>" + "".join(
        f"<th>{html.escape(label(r['settings']))}</th>" for r in runs) + "</tr>"
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


def _comparison(report: dict, all_results) -> str:
    runs = report.get("runs") or []
    if len(runs) < 2 or all_results is None:
        return ""
    text = ("<h2>Comparison</h2><p>Every combination replayed the same traces, interleaved "
            "event by event; ratios are to the first combination (p50 for distributions)."
            f"</p>{_comparison_table(runs)}")
    if not plots_available():
        return text + f"<p>{html.escape(PLOTS_MISSING)}</p>"
    # lazy: matplotlib.pyplot is slow to import, and only --report draws plots
    from inkling.evaluation import report_plots
    return (text + f'<img alt="latency" '
            f'src="{report_plots.comparison_latency_plot(runs, all_results)}">'
            f'<img alt="per trace" src="{report_plots.comparison_per_trace_plot(runs)}">')


def _context_sample(all_results: list[list[TraceResult]]) -> str:
    """The largest repository-context block of the first run that has one, with its request."""
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
    """Whether matplotlib (the `report` extra) is installed for the plots."""
    return importlib.util.find_spec("matplotlib") is not None


def _figures(results: list[TraceResult], summaries: list[dict]) -> str:
    # lazy: matplotlib.pyplot is slow to import, and only --report draws plots
    from inkling.evaluation import report_plots
    plots = [("Latency", report_plots.latency_plot(results)),
             ("Per trace", report_plots.per_trace_plot(results, summaries)),
             ("Tokens per forward", report_plots.tokens_per_forward_plot(results))]
    return "".join(f'<h2>{title}</h2><img alt="{title}" src="{uri}">' for title, uri in plots)


def render_report(results: list[TraceResult], report: dict,
                  all_results: list[list[TraceResult]] | None = None) -> str:
    """The HTML page for ``report`` (the replay's JSON) and its traces; with ``--compare``,
    ``all_results`` holds every combination's and a comparison section leads."""
    summaries = [summarise([t]) for t in results]
    figures = _figures(results, summaries) if plots_available() else (
        f"<p>{html.escape(PLOTS_MISSING)}</p>")
    config = html.escape(json.dumps(report["config"], indent=2))
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>inkling replay</title>"
            f"<style>{_STYLE}</style></head><body><h1>inkling replay</h1>"
            f"<p>{report['traces']} traces, {report['completions']} completions, "
            f"{report['edits']} edits.</p>{_comparison(report, all_results)}"
            f"<h2>Metrics{_first(report)}</h2>{_metrics_table(report)}"
            f"<h2>Problems</h2>{_errors(report)}"
            f"{figures}{_context_sample(all_results or [results])}"
            f"<h2>Traces</h2>{_per_trace_table(results, summaries)}"
            f"<h2>Configuration</h2><pre>{config}</pre></body></html>\n")
