"""benchmarks/defaults.py's checks: what it asks of the defaults, on made-up runs."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))


def test_the_defaults_benchmark_checks_drafting_where_auto_chose_it():
    """benchmarks/defaults.py: where auto drafts, tokens per forward must reach 2.5; where it
    does not, forced suffix drafting must make fewer tokens a forward than the 16-row
    forward auto timed costs in one-row forwards (else auto chose wrong)."""
    from defaults import _drafting_check

    def run(tpf):
        return {"tokens_per_forward": tpf, "tokens_per_forward_n": 9, "latency_ms": {"p50": 9.0}}
    cpu = {"mode": "none", "rows": [1, 8, 16], "forward_ms": [1.0, 3.0, 6.4]}
    gpu = {**cpu, "mode": "suffix", "forward_ms": [2.0, 2.1, 2.2]}
    assert _drafting_check(cpu, run(1.0), run(1.04))[2]
    assert not _drafting_check(cpu, run(1.0), run(6.5))[2]      # drafting would have paid
    assert "1.04 < 6.40" in _drafting_check(cpu, run(1.0), run(1.04))[1]
    assert _drafting_check(gpu, run(2.6), run(2.6))[2]
    assert not _drafting_check(gpu, run(1.2), run(1.2))[2]      # drafting chosen, not paying


def test_the_defaults_benchmark_asks_the_monitor_for_fewer_syntax_errors():
    """benchmarks/defaults.py: the monitor on must leave fewer syntax errors in shown drafts
    than off (no absolute floor: the guard cuts a draft to the start of a line being typed,
    which a whole-document reparse may still count as an error)."""
    from defaults import _checks

    def run(draft, monitor, valid):
        return {"settings": {"completion.draft": draft, "completion.monitor": monitor},
                "shown": 1.0, "guard_cut": 0.0, "guard_emptied": 0.0, "syntax_valid": valid,
                "syntax_valid_n": 9, "undefined_names": 0.0, "undefined_names_n": 9,
                "exact_line": 0.1, "latency_ms": {"p50": 9.0}, "tokens_per_forward": 1.0,
                "tokens_per_forward_n": 9}
    chosen = {"mode": "none", "rows": [1, 8, 16], "forward_ms": [1.0, 3.0, 6.4]}

    def syntax(on, off):
        runs = [run(d, m, on if m == "on" else off) for d in ("auto", "none", "suffix")
                for m in ("on", "off")]
        return dict((name, (text, ok)) for name, text, ok in _checks(runs, chosen))["syntax_valid"]
    assert syntax(0.90, 0.87)[1] and "0.1000 (n 9) < monitor off's 0.1300" in syntax(0.90, 0.87)[0]
    assert not syntax(0.86, 0.87)[1]
    assert not syntax(0.87, 0.87)[1]
    assert syntax(1.0, 1.0)[1]                              # no errors either way
    assert not syntax(None, 0.9)[1]


def test_the_defaults_benchmark_says_what_the_latency_gap_is_made_of():
    """benchmarks/defaults.py: under the checks, the monitor's own cost (draft=none on
    against off), the forwards its drafts take against off's, and, where auto chose
    none, the same configuration's two columns."""
    from defaults import _latency_parts

    p50 = {("auto", "on"): 12.0, ("auto", "off"): 10.5, ("none", "on"): 12.5,
           ("none", "off"): 10.0, ("suffix", "on"): 13.0, ("suffix", "off"): 11.0}
    runs = [{"settings": {"completion.draft": d, "completion.monitor": m},
             "latency_ms": {"p50": ms},
             "forwards": {"per_completion": 21.0 if m == "on" else 20.0}}
            for (d, m), ms in p50.items()]
    cpu = _latency_parts(runs, {"mode": "none"})
    assert cpu == ["the monitor's own cost: draft=none, monitor on 12.5 ms against off 10.0 ms "
                   "(x1.250)",
                   "  its drafts' forwards, a completion's mean: 21.00 against off's 20.00 "
                   "(x1.050)",
                   "one configuration twice (auto chose none), monitor off: draft=auto 10.5 ms "
                   "against draft=none 10.0 ms (x1.050)"]
    assert _latency_parts(runs, {"mode": "suffix"}) == cpu[:2]   # auto drafts: not alike


def test_the_defaults_benchmark_holds_the_monitor_to_its_latency_rule():
    """benchmarks/defaults.py: the monitor's own cost (draft=none, on against off, p50) at
    most MONITOR_COST (docs/decisions/monitor-default.md), whatever auto's column reads."""
    from defaults import MONITOR_COST, _checks

    def runs(on, off):
        p50 = {("auto", "on"): on * 1.05, ("auto", "off"): off, ("none", "on"): on,
               ("none", "off"): off, ("suffix", "on"): on, ("suffix", "off"): off}
        return [{"settings": {"completion.draft": d, "completion.monitor": m},
                 "shown": 1.0, "guard_cut": 0.0, "guard_emptied": 0.0, "syntax_valid": 0.9,
                 "syntax_valid_n": 9, "undefined_names": 0.0, "undefined_names_n": 9,
                 "exact_line": 0.1, "latency_ms": {"p50": ms}, "tokens_per_forward": 1.0,
                 "tokens_per_forward_n": 9} for (d, m), ms in p50.items()]
    chosen = {"mode": "none", "rows": [1, 8, 16], "forward_ms": [1.0, 3.0, 6.4]}

    def latency(on, off, bound=MONITOR_COST["bundled"]):
        return dict((n, (t, ok)) for n, t, ok in _checks(runs(on, off), chosen, bound))[
            "latency p50"]
    assert latency(11.4, 10.0)[1] and "x1.140" in latency(11.4, 10.0)[0]
    assert not latency(11.6, 10.0)[1]
    assert not latency(11.0, 10.0, MONITOR_COST["given"])[1]
    assert latency(10.4, 10.0, MONITOR_COST["given"])[1]
