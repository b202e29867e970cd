"""What a replay records per trace, and the metrics it reports (docs/evaluation.md)."""
from __future__ import annotations

from dataclasses import dataclass, field

from inkling.evaluation import metrics as m


@dataclass(frozen=True)
class CompletionRecord:
    line: int                    # the complete event's line in the trace
    path: str
    expected: str
    drafts: tuple[str, ...]      # best first
    latency_ms: float
    first_token_ms: float
    model_ms: float
    forwards: int
    tokens: int
    prefill_tokens: int
    reused_tokens: int
    syntax_valid: bool | None    # the first draft's; None: not shown, no grammar, or failed
    stale_tokens: int = 0        # stale cached tokens when this completion ran
    refreshed: bool = False      # this completion's sync recomputed stale tokens
    undefined: tuple[str, ...] | None = None   # draft 0's undefined names (None: not measured)
    identifier_match: bool | None = None       # None: no identifier after a trigger expected
    draft_ms: tuple[float, ...] = ()           # each retrieval drafting step, in ms
    context_tokens: int = 0                    # tokens of the repository-context block
    context_text: str = ""                     # that block as the model read it
    asked: int = 1                             # drafts asked for (k)
    guard_cut: int = 0                         # characters the syntax guard cut from draft 0
    guard_emptied: bool = False                # it left nothing
    failed: tuple[str, ...] = ()               # metrics whose analysis raised on draft 0
    engine_ms: float | None = None             # via LSP: the Engine's own latency

    @property
    def first(self) -> str:
        return self.drafts[0] if self.drafts else ""

    @property
    def shown(self) -> bool:
        return m.shown(self.first)

    @property
    def valid(self) -> bool | None:
        """syntax_valid as counted (None: not shown or no grammar; a failed check: False)."""
        if not self.shown:
            return None
        return False if "syntax_valid" in self.failed else self.syntax_valid

    @property
    def undefined_names(self) -> bool | None:
        """Whether the shown draft uses an undefined name (None: not measured; failed: True)."""
        if not self.shown:
            return None
        if "undefined_names" in self.failed:
            return True
        return None if self.undefined is None else bool(self.undefined)


@dataclass(frozen=True)
class ReplayFailure:
    trace: str
    line: int | None
    message: str
    kind: str = "error"          # "check" (a check that did not match) or "error"

    def __str__(self) -> str:
        where = f"{self.trace}:{self.line}" if self.line is not None else self.trace
        return f"{where}: {self.message}"


@dataclass
class TraceResult:
    source: str                  # the trace file as named on the command line
    name: str                    # the header's name ('' when the header could not be read)
    completions: list[CompletionRecord] = field(default_factory=list)
    edit_ms: list[float] = field(default_factory=list)
    checks: int = 0
    accepts: int = 0             # accept events replayed
    accepted: int = 0            # of those, drafts taken (their first line was typed next)
    idle_tokens: int = 0         # stale cache tokens the idle policy recomputed (replay clock)
    failures: list[ReplayFailure] = field(default_factory=list)
    model_ms: float = 0.0
    total_ms: float = 0.0

    @property
    def stopped(self) -> bool:
        """An error (not a failed check) ended this trace's replay early."""
        return any(f.kind == "error" for f in self.failures)

    @property
    def sync_ok(self) -> bool:
        return not self.failures


def _round(value, digits: int = 4):
    return None if value is None else round(value, digits)


def _sum_and_mean(values: list[int]) -> dict:
    return {"sum": sum(values), "per_completion": _round(m.mean(values))}


def _shown(recs: list[CompletionRecord]) -> dict:
    """Shares of completions shown, cut by the syntax guard, and emptied by it."""
    return {"shown": _round(m.fraction([r.shown for r in recs])),
            "guard_cut": _round(m.fraction([r.guard_cut > 0 for r in recs])),
            "guard_emptied": _round(m.fraction([r.guard_emptied for r in recs]))}


def _quality(recs: list[CompletionRecord]) -> dict:
    expected_chars = sum(len(r.expected) for r in recs)
    accepted = [m.accepted_chars(r.first, r.expected) for r in recs]
    return {
        **_shown(recs),
        "exact_line": _round(m.fraction([m.exact_line(r.first, r.expected) for r in recs])),
        "exact_line_any": _round(m.fraction([m.exact_line_any(list(r.drafts), r.expected)
                                             for r in recs])),
        "edit_similarity": _round(m.mean([m.edit_similarity(r.first, r.expected)
                                          for r in recs])),
        "accepted_chars": {"sum": sum(accepted),
                           "fraction": _round(sum(accepted) / expected_chars)
                           if expected_chars else None,
                           "per_completion": _round(m.mean(accepted))},
        "syntax_valid": _round(m.fraction([r.valid for r in recs])),
        "syntax_valid_n": m.measured([r.valid for r in recs]),
        "undefined_names": _round(m.fraction([r.undefined_names for r in recs])),
        "undefined_names_n": m.measured([r.undefined_names for r in recs]),
        "analysis_failures": {key: sum(key in r.failed for r in recs)
                              for key in ("syntax_valid", "undefined_names")},
        "identifier_match": _round(m.fraction([r.identifier_match for r in recs])),
        "identifier_triggers": sum(r.identifier_match is not None for r in recs),
    }


def _speculation(recs: list[CompletionRecord]) -> dict:
    """What drafting buys apart from batching: tokens per forward where one draft was asked,
    and all drafts' tokens per forward and per second of decoding."""
    one = [r for r in recs if r.asked == 1]
    decoding_s = sum(r.latency_ms - r.first_token_ms for r in recs) / 1000
    return {
        "tokens_per_forward": _round(m.ratio(sum(r.tokens for r in one),
                                             sum(r.forwards for r in one))),
        "tokens_per_forward_n": len(one),
        "draft_throughput": {
            "tokens_per_forward": _round(m.ratio(sum(r.tokens for r in recs),
                                                 sum(r.forwards for r in recs))),
            "tokens_per_s": _round(m.ratio(sum(r.tokens for r in recs), decoding_s), 1)},
    }


def _protocol(recs: list[CompletionRecord]) -> dict:
    """Via LSP only: the Engine's own latency and the protocol's overhead per request."""
    if not any(r.engine_ms is not None for r in recs):
        return {}
    return {"engine_latency_ms": m.distribution([r.engine_ms for r in recs]),
            "protocol_overhead_ms": m.distribution([r.latency_ms - r.engine_ms for r in recs])}


def _cost(recs: list[CompletionRecord], edit_ms: list[float]) -> dict:
    return {
        "latency_ms": m.distribution([r.latency_ms for r in recs]),
        **_protocol(recs),
        "first_token_ms": m.distribution([r.first_token_ms for r in recs]),
        "edit_latency_ms": m.distribution(edit_ms),
        "forwards": _sum_and_mean([r.forwards for r in recs]),
        **_speculation(recs),
        "prefill_tokens": _sum_and_mean([r.prefill_tokens for r in recs]),
        "reused_tokens": _sum_and_mean([r.reused_tokens for r in recs]),
        "context_tokens": {**_sum_and_mean([r.context_tokens for r in recs]),
                           "with_block": _round(m.fraction([r.context_tokens > 0
                                                            for r in recs]))},
        "stale_tokens": {"mean": _round(m.mean([r.stale_tokens for r in recs])),
                         "max": max((r.stale_tokens for r in recs), default=None)},
        "refreshes": sum(r.refreshed for r in recs),
    }


def _idle(results: list[TraceResult]) -> dict:
    """Stale cache tokens the idle policy recomputed in the replay clock's pauses."""
    return {"refresh_tokens": sum(t.idle_tokens for t in results)}


def _accepted(results: list[TraceResult]) -> dict:
    events, taken = sum(t.accepts for t in results), sum(t.accepted for t in results)
    return {"sum": taken, "events": events,
            "fraction": _round(taken / events) if events else None}


def summarise(results: list[TraceResult]) -> dict:
    """The metrics of docs/evaluation.md over all completions and edits of ``results``."""
    recs = [r for t in results for r in t.completions]
    edit_ms = [ms for t in results for ms in t.edit_ms]
    return {
        **_quality(recs),
        **_cost(recs, edit_ms),
        # while typing: every completion but each trace's first (whose cache is cold)
        "prefill_tokens_typing": _round(m.mean([r.prefill_tokens for t in results
                                                for r in t.completions[1:]])),
        "first_token_ms_typing": m.distribution([r.first_token_ms for t in results
                                                 for r in t.completions[1:]]),
        "accepted": _accepted(results),
        "idle": _idle(results),
        "sync_ok": all(t.sync_ok for t in results),
        "checks": sum(t.checks for t in results),
        "checks_failed": sum(1 for t in results for f in t.failures if f.kind == "check"),
        "model_ms": _round(sum(t.model_ms for t in results), 3),
        "total_ms": _round(sum(t.total_ms for t in results), 3),
        "completions": len(recs),
        "edits": len(edit_ms),
        "traces": len(results),
        "errors": [str(f) for t in results for f in t.failures],
    }


def _unique_key(key: str, taken: dict) -> str:
    n, out = 2, key
    while out in taken:
        out, n = f"{key}#{n}", n + 1
    return out


def runtime_config(runtime) -> dict:
    """The report's ``config.runtime`` block: what was loaded, and where."""
    return {"model": str(runtime.path), "device": str(runtime.device),
            "dtype": str(runtime.dtype).removeprefix("torch."), "fim_order": runtime.fim_order,
            "context_limit": runtime.context_limit, "threads": _threads(runtime),
            "auto_forward": _auto_forward(runtime)}


def _auto_forward(runtime) -> str:
    kind = runtime.forward_kind("auto")
    note = runtime.auto_note() if kind != "native" else ""
    return f"{kind} ({note})" if note else kind


def _threads(runtime) -> dict | None:
    """``ThreadChoice.report`` of the forward's CPU threads, or None on a GPU."""
    return runtime.threads.report() if runtime.threads is not None else None


def replay_json(results: list[TraceResult], config: dict) -> dict:
    """The object ``inkling replay --json`` writes."""
    per_trace: dict[str, dict] = {}
    for t in results:
        per_trace[_unique_key(t.source, per_trace)] = {"name": t.name, **summarise([t])}
    return {**summarise(results), "config": config, "per_trace": per_trace}


def comparison_json(combinations, runs: list[list[TraceResult]]) -> list[dict]:
    """The ``runs`` list of ``inkling replay --compare``: settings and metrics per combination."""
    out = []
    for combo, results in zip(combinations, runs):
        report = replay_json(results, {})
        del report["config"]
        out.append({"settings": dict(combo.settings), **report})
    return out
