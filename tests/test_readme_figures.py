"""Every figure in the README's headline results is in the store record its row names.

The table lives under the README's "Headline results" heading; each row names one store
file, `benchmarks/store/<name>.jsonl`, in backticks and, in parentheses after it, the run
(``run N``: the record's 1-based index in the file). Every number in the row's other cells
must appear in that record's figures or in its output as a number of its own (1.54 does not
match 11.54, 1.545 or 1.54.2).
"""
from __future__ import annotations

import json
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
HEADING = "## Headline results"
SOURCE = re.compile(r"`(benchmarks/store/[^`]+\.jsonl)`(?:\s*\(([^)]*)\))?")
RUN = re.compile(r"^run (\d+)$")
NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?")
MIN_ROWS = 5


def results_rows(readme: str) -> list[list[str]]:
    """The cells of each body row of the first table under the headline heading."""
    if HEADING not in readme:
        raise AssertionError(f"README.md has no {HEADING!r} section")
    section = readme.split(HEADING, 1)[1].split("\n## ", 1)[0]
    table = [line for line in section.splitlines() if line.startswith("|")]
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in table[2:]]


def quoted_numbers(cells: list[str]) -> list[str]:
    """The numbers of a row, its source path left out."""
    return [n for cell in cells for n in NUMBER.findall(SOURCE.sub("", cell))]


def appears(number: str, text: str) -> bool:
    """``number`` occurs in ``text`` as a whole number, not inside a longer one."""
    return re.search(rf"(?<![\d.]){re.escape(number)}(?!\d|\.\d)", text) is not None


def record_text(path: Path, run: int) -> str | None:
    """The figures (``name value`` a line) and the output of record ``run`` of the store
    file ``path``; None if the file holds no such run."""
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    if not 1 <= run <= len(lines):
        return None
    record = json.loads(lines[run - 1])
    figures = "".join(f"{k} {v}\n" for k, v in (record.get("figures") or {}).items())
    return figures + (record.get("output") or "")


def missing_figures(cells: list[str], repo: Path = REPO) -> list[str]:
    """What is wrong with one row: no source, a source that is not there, no run named or
    a run the file does not hold, no figure, or each number that run does not hold."""
    sources = [m for cell in cells for m in SOURCE.findall(cell)]
    if len(sources) != 1:
        return [f"names {len(sources)} store files, not one: {cells}"]
    source, run = sources[0]
    path = repo / source
    if not path.is_file():
        return [f"{source} does not exist"]
    number = RUN.match(run.strip())
    if not number:
        return [f"{source} names no run (`{source}` (run N)): {cells[0]}"]
    text = record_text(path, int(number.group(1)))
    if text is None:
        return [f"{source} has no run {run!r}"]
    numbers = quoted_numbers(cells)
    if not numbers:
        return [f"quotes no figure: {cells}"]
    return [f"{n} is not in {source} ({run}) (row: {cells[0]})" for n in numbers
            if not appears(n, text)]


def test_every_headline_figure_is_in_the_record_its_row_names():
    rows = results_rows((REPO / "README.md").read_text(encoding="utf-8"))
    assert len(rows) >= MIN_ROWS, f"the headline table has {len(rows)} rows"
    problems = [p for cells in rows for p in missing_figures(cells)]
    assert not problems, "\n".join(problems)


def _store(tmp_path: Path, *records: dict) -> Path:
    folder = tmp_path / "benchmarks" / "store"
    folder.mkdir(parents=True)
    (folder / "step.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return tmp_path


def test_a_figure_that_is_not_in_its_record_is_caught(tmp_path):
    # the README once quoted 0.58 / 2.51 / 14.7 ms against a run's 1.54 / 3.70 / 16.63
    repo = _store(tmp_path, {"figures": {}, "output": "rows 1, 8, 64: native 1.54 / 3.70 / 16.63 ms\n"})
    row = ["one-row, 8-row and 64-row forward (ms)", "0.58 / 2.51 / 14.7", "",
           "`benchmarks/store/step.jsonl` (run 1)"]
    assert missing_figures(row, repo) == [
        f"{n} is not in benchmarks/store/step.jsonl (run 1) (row: {row[0]})"
        for n in ("0.58", "2.51", "14.7")]
    row[1] = "1.54 / 3.70 / 16.63"
    assert missing_figures(row, repo) == []


def test_a_figure_may_come_from_the_records_figures(tmp_path):
    repo = _store(tmp_path, {"figures": {"exact": 10.8, "p50_ms": 14.2}, "output": ""})
    assert missing_figures(["x", "10.8% / 14.2 ms", "", "`benchmarks/store/step.jsonl` (run 1)"],
                           repo) == []


def test_a_number_matches_only_as_a_whole():
    assert appears("1.54", "native 1.54 / 1.55")
    assert not appears("1.54", "11.54 1.545 1.54.2")
    assert appears("0", "0 differ")
    assert not appears("0", "10 20.5")


def test_a_row_without_a_single_existing_source_is_refused(tmp_path):
    repo = _store(tmp_path, {"figures": {}, "output": "1.0\n"})
    assert "names 0 store files" in missing_figures(["x", "1.0", ""], repo)[0]
    assert "does not exist" in missing_figures(
        ["x", "1.0", "`benchmarks/store/no_such_file.jsonl` (run 1)"], repo)[0]
    assert "names no run" in missing_figures(
        ["x", "1.0", "`benchmarks/store/step.jsonl`"], repo)[0]
    assert "has no run" in missing_figures(
        ["x", "1.0", "`benchmarks/store/step.jsonl` (run 99)"], repo)[0]
    assert "quotes no figure" in missing_figures(
        ["x", "", "`benchmarks/store/step.jsonl` (run 1)"], repo)[0]


def test_a_figure_of_another_run_of_the_same_file_is_caught(tmp_path):
    repo = _store(tmp_path, {"figures": {}, "output": "exact 10.8%\n"},
                  {"figures": {}, "output": "exact 11.2%\n"})
    assert missing_figures(["x", "10.8%", "", "`benchmarks/store/step.jsonl` (run 1)"], repo) == []
    assert missing_figures(["x", "11.2%", "", "`benchmarks/store/step.jsonl` (run 1)"], repo) != []
    assert missing_figures(["x", "11.2%", "", "`benchmarks/store/step.jsonl` (run 2)"], repo) == []
