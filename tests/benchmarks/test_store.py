"""The benchmark store's round trip, the tables generated from it, and their staleness
check; the suite's registry and its skips."""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import store  # noqa: E402
import suite  # noqa: E402
import tables  # noqa: E402


def _record(benchmark: str, figures: dict, output: str = "ok\n") -> dict:
    return {"benchmark": benchmark, "run": None, "date": "2026-12-01T00:00:00Z",
            "commit": "abc1234", "dirty": False, "weights": "inkling-tiny step 1 of run 1",
            "machine": {"cpu": "test cpu", "cores": 2, "memory_gib": 4.0, "gpu": None},
            "load": {"start": 0.5, "end": 0.7}, "command": ["python", "x.py"],
            "wall_s": 1.5, "figures": figures, "output": output}


def test_append_and_read_round_trip(tmp_path):
    first = store.append_run(_record("step", {"ms": 1.25}), tmp_path)
    second = store.append_run(_record("step", {"ms": 1.5, "mode": "pie"}, "two\n"), tmp_path)
    assert (first["run"], second["run"]) == (1, 2)
    runs = store.read_runs("step", tmp_path)
    assert runs == [first, second]
    assert store.read_run("step", 2, tmp_path)["figures"] == {"ms": 1.5, "mode": "pie"}
    assert store.read_run("step", 3, tmp_path) is None
    assert store.read_runs("absent", tmp_path) == []
    assert store.names(tmp_path) == ["step"]
    assert len((tmp_path / "step.jsonl").read_text().splitlines()) == 2


def test_a_record_names_the_machine_commit_and_weights(tmp_path):
    rec = store.record("x", ["python", "x.py"], "out\n", {"a": 1}, 0.123,
                       {"start": 0.1, "end": 0.2}, model=tmp_path / "no-model")
    assert rec["weights"] == "no-model" and isinstance(rec["dirty"], bool) and rec["commit"]
    assert rec["machine"]["cores"] >= 1 and rec["wall_s"] == 0.12


def test_tables_are_regenerated_from_the_store_and_idempotent(tmp_path):
    folder = tmp_path / "store"
    store.append_run(_record("step", {"ms": 9.0}), folder)
    store.append_run(_record("step", {"ms": 1.25}), folder)
    store.append_run(_record("old", {}), folder)
    doc = tmp_path / "benchmarks.md"
    doc.write_text(f"# B\n\nhand-written\n\n{tables.BEGIN}\nstale\n{tables.END}\n\ntail\n")
    assert tables.write(doc, folder)
    text = doc.read_text()
    assert "hand-written" in text and text.endswith("tail\n") and "stale" not in text
    assert "| `step` | 2 of 2 |" in text and "| ms | 1.25 |" in text and "| ms | 9 |" not in text
    assert "test cpu, 2 cores, 4.0 GiB" in text and "0.5 to 0.7" in text
    assert not tables.write(doc, folder)
    assert doc.read_text() == text


def test_check_detects_stale_tables(tmp_path):
    folder = tmp_path / "store"
    store.append_run(_record("step", {"ms": 1.0}), folder)
    doc = tmp_path / "benchmarks.md"
    doc.write_text(f"{tables.BEGIN}\n{tables.END}\n")
    args = ["--doc", str(doc), "--store", str(folder)]
    assert tables.main([*args, "--check"]) == 1
    assert tables.main(args) == 0
    assert tables.main([*args, "--check"]) == 0
    store.append_run(_record("step", {"ms": 2.0}), folder)
    assert tables.main([*args, "--check"]) == 1


def test_the_committed_tables_are_current():
    assert tables.check(), "docs/benchmarks.md is stale: run python benchmarks/tables.py"


def test_the_registry_names_existing_scripts_once():
    names = [b.name for b in suite.BENCHMARKS]
    assert len(names) == len(set(names))
    for bench in suite.BENCHMARKS:
        assert (store.REPO / "benchmarks" / f"{bench.script}.py").is_file(), bench.script


def test_a_command_adds_quick_and_json(tmp_path):
    bench = suite.Benchmark("x", "card", ["--lines", "40"], ["--lines", "1"])
    out = tmp_path / "f.json"
    assert suite.command(bench, suite.Form.FULL, out, tmp_path)[1:] == [
        "benchmarks/card.py", "--lines", "40", "--json", str(out)]
    assert suite.command(bench, suite.Form.QUICK, out, tmp_path)[2:] == [
        "--lines", "1", "--quick", "--json", str(out)]
    assert suite.command(bench, suite.Form.LONG, out, tmp_path)[2:] == [
        "--lines", "40", "--json", str(out)]                  # no long form: the full one


def test_long_runs_only_the_benchmarks_with_a_long_form(monkeypatch):
    ran = []
    monkeypatch.setattr(suite, "BENCHMARKS", [suite.Benchmark("short", "card"),
                                              suite.Benchmark("soaked", "soak", long=["--x"])])
    monkeypatch.setattr(suite, "run_one", lambda bench, form: ran.append((bench.name, form))
                        or (True, 0.0))
    monkeypatch.setattr(suite.tables, "write", lambda: False)
    assert suite.main(["--long"]) == 0
    assert ran == [("soaked", suite.Form.LONG)]


def test_a_missing_prerequisite_skips_without_running(monkeypatch, capsys, tmp_path):
    ran = []
    monkeypatch.setattr(suite, "BENCHMARKS", [
        suite.Benchmark("needs_x", "card", needs=lambda: "x is not installed")])
    monkeypatch.setattr(suite, "run_one", lambda *a: ran.append(a) or (True, 0.0))
    monkeypatch.setattr(suite.tables, "write", lambda: False)
    assert suite.main(["--quick"]) == 0
    assert ran == [] and "needs_x: skipped (x is not installed)" in capsys.readouterr().out


def test_a_failing_benchmark_fails_the_suite(monkeypatch):
    monkeypatch.setattr(suite, "BENCHMARKS", [suite.Benchmark("bad", "card")])
    monkeypatch.setattr(suite, "run_one", lambda *a: (False, 0.0))
    monkeypatch.setattr(suite.tables, "write", lambda: False)
    assert suite.main([]) == 1


def test_a_run_that_fails_its_checks_is_recorded_with_its_exit_code(monkeypatch):
    """A benchmark whose check failed still wrote its figures: the store keeps the run, with
    its exit code, and the suite counts it failed."""
    kept = []

    def failing(bench, form, json_path, tmp):
        return [sys.executable, "-c", f"import json; json.dump({{'p50': 1.5}}, "
                f"open({str(json_path)!r}, 'w')); print('FAIL  a check'); raise SystemExit(1)"]
    monkeypatch.setattr(suite, "command", failing)
    monkeypatch.setattr(suite.store, "append_run", kept.append)
    ok, _ = suite.run_one(suite.Benchmark("checked", "card"), suite.Form.FULL)
    assert not ok and len(kept) == 1
    assert kept[0]["exit_code"] == 1 and kept[0]["figures"] == {"p50": 1.5}
    assert "FAIL  a check" in kept[0]["output"]
