"""`inkling replay --compare`: combinations, interleaving, the JSON shape, the report's
comparison, and bad keys refused before anything runs."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from inkling.completion.errors import OptionError
from inkling.completion.options import InklingOptions
from inkling.cli.main import main
from inkling.evaluation.comparison import ablations, combinations

REPO = Path(__file__).resolve().parents[2]
TRACES = sorted(str(p) for p in (REPO / "benchmarks" / "traces").glob("*.jsonl"))


def test_combinations_are_the_product_in_the_order_given():
    combos = combinations(["completion.draft=none,suffix", "cache.mode=full,pie",
                           "completion.maxNewTokens=4,8"], InklingOptions())
    assert len(combos) == 8
    assert combos[0].settings == {"completion.draft": "none", "cache.mode": "full",
                                  "completion.max_new_tokens": 4}
    assert combos[1].settings["completion.max_new_tokens"] == 8          # last key fastest
    assert combos[-1].options.completion.draft == "suffix"
    assert combos[-1].options.cache.mode == "pie"
    assert combos[-1].options.completion.max_new_tokens == 8
    assert combinations([], InklingOptions())[0].settings == {}


def test_values_are_typed_as_the_option_is():
    combos = combinations(["completion.tokenHealing=true,false",
                           "cache.stale_threshold=0.5,0.9"], InklingOptions())
    assert combos[0].options.completion.token_healing is True
    assert combos[2].options.completion.token_healing is False
    assert combos[1].options.cache.stale_threshold == 0.9


@pytest.mark.parametrize("spec, message", [
    ("completion.nope=a,b", "unknown option 'completion.nope'"),
    ("completion=a", "is a section"),
    ("completion.draft=none,sideways", "completion.draft=sideways"),
    ("completion.drafts=2,many", "'many' is not an integer"),
    ("completion.draft", "expected KEY=V1,V2"),
    ("completion.draft=none,none", "repeated"),
    ("completion.drafts=0,2", "completion.drafts=0"),
])
def test_bad_specs_are_named(spec, message):
    with pytest.raises(OptionError, match=message.replace("(", r"\(").replace(")", r"\)")):
        combinations([spec], InklingOptions())


def test_ablations_are_the_options_then_each_change_alone():
    base = InklingOptions()
    runs = ablations(["completion.draft=none", "completion.monitor=off", "cache.mode=full"],
                     base)
    assert [r.settings for r in runs] == [
        {"completion.draft": "auto", "completion.monitor": "on", "cache.mode": "pie"},
        {"completion.draft": "none", "completion.monitor": "on", "cache.mode": "pie"},
        {"completion.draft": "auto", "completion.monitor": "off", "cache.mode": "pie"},
        {"completion.draft": "auto", "completion.monitor": "on", "cache.mode": "full"}]
    assert runs[0].options == base
    assert runs[2].options.completion.monitor == "off" and runs[2].options.completion.draft == \
        "auto"
    assert runs[3].options.cache.mode == "full" and runs[3].options.completion.monitor == "on"


@pytest.mark.parametrize("spec, message", [
    ("completion.monitor=on", "already its value"),
    ("completion.draft=none,suffix", "one value"),
    ("completion.nope=a", "unknown option 'completion.nope'"),
    ("completion.draft=sideways", "completion.draft=sideways"),
])
def test_bad_ablations_are_named(spec, message):
    with pytest.raises(OptionError, match=message):
        ablations([spec], InklingOptions())


def test_ablate_and_compare_do_not_mix(capsys):
    code = main(["replay", TRACES[0], "--compare", "completion.draft=none,suffix",
                 "--ablate", "completion.monitor=off"])
    assert code == 2 and "cannot be combined" in capsys.readouterr().err


def test_a_bad_key_fails_before_anything_runs(tmp_path, capsys, monkeypatch):
    from inkling.completion.engine import Engine
    loads = []
    monkeypatch.setattr(Engine, "load_model", lambda self, *a, **k: loads.append(a))
    code = main(["replay", TRACES[0], "--model", str(tmp_path / "no-model"), "--compare",
                 "completion.drift=none,suffix"])
    err = capsys.readouterr().err
    assert code == 2 and "unknown option 'completion.drift'" in err
    assert "does not exist" not in err and loads == []    # the model was never looked for


def test_combinations_are_interleaved_event_by_event(tiny_model_dir, monkeypatch):
    """Every event runs under each combination before the next, the order turning with
    each event of a kind (completions too: each combination first as often); each
    result's times are its own session's, and the results are what a replay of each
    combination alone gives."""
    from inkling.evaluation import replay as replay_module
    from inkling.evaluation.replay import turn_order
    from inkling.cli.replay_run import replay_all
    from inkling.evaluation.trace_file import read_trace
    order = []
    real = replay_module._step

    def recording(session, event):
        order.append((session.trace.name, event.line, session.engine.options.completion.draft))
        return real(session, event)
    monkeypatch.setattr(replay_module, "_step", recording)
    base = InklingOptions().merged({"model": {"path": str(tiny_model_dir)},
                                    "completion": {"max_new_tokens": 3}})
    combos = combinations(["completion.draft=none,prompt-lookup"], base)
    traces = [read_trace(p) for p in TRACES[:2]]
    _, runs = replay_all(combos, traces, None)
    expected, names = [], ("none", "prompt-lookup")
    for trace in traces:
        turns = {}
        for event in trace.events:
            turn = turns[type(event)] = turns.get(type(event), -1) + 1
            expected += [(trace.name, event.line, names[i]) for i in turn_order(2, turn)]
    assert order == expected
    completes = [d for name, line, d in order if line in {
        e.line for e in traces[0].events if type(e).__name__ == "CompleteEvent"}
        and name == traces[0].name]
    assert completes[:8] == ["none", "prompt-lookup", "prompt-lookup", "none",
                             "prompt-lookup", "none", "none", "prompt-lookup"]
    assert [len(r) for r in runs] == [2, 2]
    for per_combo in runs:
        for result in per_combo:
            spent = sum(c.latency_ms for c in result.completions)
            assert spent <= result.total_ms and result.model_ms <= result.total_ms
    # lossless drafting: the same suggestions under both, and as each replays alone
    assert [[c.drafts for c in t.completions] for t in runs[0]] == \
        [[c.drafts for c in t.completions] for t in runs[1]]
    monkeypatch.setattr(replay_module, "_step", real)
    from inkling.completion.engine import Engine
    from inkling.evaluation.replay import Replayer
    from inkling.evaluation.syntax_check import SyntaxChecker
    alone = Replayer(combos[0].options, Engine(combos[0].options).load_model(), SyntaxChecker())
    assert [c.drafts for c in alone.replay(traces[0]).completions] == \
        [c.drafts for c in runs[0][0].completions]


def test_the_turns_give_every_session_every_place_equally():
    from collections import Counter
    from inkling.evaluation.replay import turn_order
    assert [turn_order(3, k) for k in range(6)] == [[0, 1, 2], [2, 1, 0], [1, 2, 0],
                                                    [0, 2, 1], [2, 0, 1], [1, 0, 2]]
    for n in (1, 2, 5, 6):
        places = Counter((s, turn_order(n, k).index(s)) for k in range(2 * n)
                         for s in range(n))
        assert set(places.values()) == {2} and len(places) == n * n
        assert all(sorted(turn_order(n, k)) == list(range(n)) for k in range(4 * n))


def test_a_failed_event_ends_only_its_sessions_trace(tiny_model_dir, monkeypatch):
    """In a replay together, a session whose event fails stops there (the failure
    recorded, the progress counted to the trace's end); the other sessions go on."""
    from inkling.evaluation import replay as replay_module
    from inkling.evaluation.replay import Replayer, replay_together
    from inkling.evaluation.syntax_check import SyntaxChecker
    from inkling.evaluation.trace_file import CompleteEvent, read_trace
    from inkling.completion.engine import Engine
    trace = read_trace(TRACES[0])
    base = InklingOptions().merged({"model": {"path": str(tiny_model_dir)},
                                    "completion": {"max_new_tokens": 3}})
    runtime = Engine(base).load_model()
    broken = InklingOptions().merged({"model": {"path": str(tiny_model_dir)},
                                      "completion": {"max_new_tokens": 3, "draft": "suffix"}})
    real = replay_module._Session.apply

    def apply(session, event):
        if session.engine.options.completion.draft == "suffix" and \
                isinstance(event, CompleteEvent):
            raise replay_module.TraceError(session.trace.source, event.line, "broken here")
        return real(session, event)
    monkeypatch.setattr(replay_module._Session, "apply", apply)
    ticks = []
    good, bad = replay_together([Replayer(base, runtime, SyntaxChecker()),
                                 Replayer(broken, runtime, SyntaxChecker())], trace, ticks.append)
    assert sum(ticks) == 2 * len(trace.events)
    assert not good.failures and len(good.completions) > 0
    assert len(bad.failures) == 1 and "broken here" in bad.failures[0].message
    assert bad.completions == []


@pytest.mark.slow
def test_the_json_and_the_report_of_a_comparison(tiny_model_dir, tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "inkling.cli.main", "replay", *TRACES[:2], "--model",
         str(tiny_model_dir), "--max-new-tokens", "3", "--json", str(tmp_path / "c.json"),
         "--report", str(tmp_path / "c.html"), "--compare", "completion.draft=none,prompt-lookup",
         "--compare", "cache.mode=full,pie"], capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-2000:]
    report = json.loads((tmp_path / "c.json").read_text())
    plain = subprocess.run(
        [sys.executable, "-m", "inkling.cli.main", "replay", *TRACES[:2], "--model",
         str(tiny_model_dir), "--max-new-tokens", "3", "--json", "-"],
        capture_output=True, text=True, timeout=900)
    plain = json.loads(plain.stdout)
    runs = report["runs"]
    assert [r["settings"] for r in runs] == [
        {"completion.draft": d, "cache.mode": c} for d in ("none", "prompt-lookup")
        for c in ("full", "pie")]
    for run in runs:
        assert set(run) == (set(plain) - {"config"}) | {"settings"}
        assert set(run["per_trace"]) == set(plain["per_trace"])
    first = {k: v for k, v in runs[0].items() if k != "settings"}
    for key in ("exact_line", "edit_similarity", "completions", "tokens_per_forward"):
        assert report[key] == first[key]
    assert report["config"]["compare"] == ["completion.draft=none,prompt-lookup",
                                           "cache.mode=full,pie"]
    page = (tmp_path / "c.html").read_text()
    assert "<h2>Comparison</h2>" in page and "<small>x" in page      # ratios to the first
    assert page.count("completion.draft=prompt-lookup, cache.mode=pie") >= 1
    assert page.count("data:image/png;base64") >= 5


@pytest.mark.slow
def test_the_json_of_an_ablation(tiny_model_dir, tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "inkling.cli.main", "replay", TRACES[0], "--model",
         str(tiny_model_dir), "--max-new-tokens", "3", "--json", "-", "--ablate",
         "completion.monitor=off", "--ablate", "completion.draft=none"],
        capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-2000:]
    report = json.loads(out.stdout)
    assert [r["settings"] for r in report["runs"]] == [
        {"completion.monitor": "on", "completion.draft": "auto"},
        {"completion.monitor": "off", "completion.draft": "auto"},
        {"completion.monitor": "on", "completion.draft": "none"}]
    assert report["config"]["ablate"] == ["completion.monitor=off", "completion.draft=none"]
    assert report["runs"][2]["tokens_per_forward"] == 1.0              # no drafting
    assert report["completions"] == report["runs"][0]["completions"] > 0
    on, off = report["runs"][0], report["runs"][1]
    assert off["guard_cut"] == off["guard_emptied"] == 0.0            # no guard, no cut
    assert 0 <= on["guard_emptied"] <= on["guard_cut"] <= 1
    for run in report["runs"]:                   # judged: the shown first drafts, no more
        assert run["syntax_valid_n"] == round(run["shown"] * run["completions"])
    head, *rows = [line for line in out.stderr.splitlines()
                   if line.startswith(("  ", "shown", "guard_cut", "syntax_valid"))][-4:]
    assert "monitor=on, draft=auto" in head           # the first column: the defaults
    assert [r.split()[0] for r in rows] == ["shown", "guard_cut", "syntax_valid"]
    assert f"(n {on['syntax_valid_n']})" in rows[2]


def test_column_heads_name_what_each_run_changes_from_the_first():
    from inkling.evaluation.comparison import column_labels
    base = {"completion.draft": "suffix", "cache.mode": "pie"}
    assert column_labels([base, {**base, "completion.draft": "none"},
                          {**base, "cache.mode": "full"}]) == [
        "draft=suffix, cache.mode=pie", "draft=none", "cache.mode=full"]
    assert column_labels([{}]) == ["as given"]


def test_the_printed_table_shows_each_run_with_its_counts():
    from inkling.evaluation.comparison import TABLE_ROWS, table
    from inkling.evaluation.replay_result import CompletionRecord, TraceResult, comparison_json

    def rec(first, valid, **kw):
        return CompletionRecord(1, "a.py", "x = 1\n", (first,), 10.0, 2.0, 5.0, 4, 4, 100, 50,
                                valid, **kw)
    combos = combinations(["completion.monitor=on,off"], InklingOptions())
    runs = comparison_json(combos, [
        [TraceResult("t.jsonl", "t", completions=[
            rec("x = 1", True), rec("", None, guard_cut=5, guard_emptied=True)])],
        [TraceResult("t.jsonl", "t", completions=[rec("x = 1", True), rec("x = (", False)])]])
    lines = table(runs).splitlines()
    assert lines[0].split() == ["monitor=on", "monitor=off"]
    rows = {line.split()[0]: line.split()[1:] for line in lines[1:]}
    assert list(rows) == list(TABLE_ROWS)
    assert rows["shown"] == ["0.5000", "1.0000"]
    assert rows["guard_emptied"] == ["0.5000", "0.0000"]
    assert rows["syntax_valid"] == ["1.0000", "(n", "1)", "0.5000", "(n", "2)"]
    assert rows["latency_ms"] == ["p50", "10.0", "p50", "10.0"]


def test_a_comparisons_report_without_matplotlib_says_how_to_get_its_plots(monkeypatch):
    import importlib.util

    from inkling.evaluation.replay_result import (CompletionRecord, TraceResult,
                                                  comparison_json, replay_json)
    from inkling.evaluation.report import render_report
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "matplotlib" else find_spec(name, *a))
    record = CompletionRecord(1, "a.py", "x = 1\n", ("x = 1",), 10.0, 2.0, 5.0, 4, 4, 100, 50,
                              True)
    results = [[TraceResult("t.jsonl", "t", completions=[record])] for _ in range(2)]
    report = replay_json(results[0], {})
    report["runs"] = comparison_json(combinations(["completion.monitor=on,off"],
                                                  InklingOptions()), results)
    page = render_report(results[0], report, results)
    assert "<h2>Comparison</h2>" in page and "<img" not in page
    assert page.count("pip install &#x27;inkling[report]&#x27;") == 2
