"""Every figure in the README's headline results is in the results file its row names.

The table lives under the README's "Headline results" heading; each row names one file
under benchmarks/results/ in backticks and, in parentheses after it, the run: text that
opens that run in the file ("run 1", "at 76f4a44"). Every number in the row's other cells
must appear in that run's part of the file (up to the next line that opens a run) as a
number of its own (1.54 does not match 11.54, 1.545 or 1.54.2).
"""
from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
HEADING = "## Headline results"
SOURCE = re.compile(r"`(benchmarks/results/[^`]+)`(?:\s*\(([^)]*)\))?")
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


def run_text(text: str, run: str) -> str | None:
    """The part of a results file that the run opened by the first header or command line
    (``#``, ``$``) holding ``run`` spans: up to the next ``# run`` header; None if no such
    line holds it."""
    lines = text.splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines)
                  if run in line and line.lstrip().startswith(("#", "$"))), None)
    if start is None:
        return None
    end = next((j for j in range(start + 1, len(lines))
                if re.match(r"#+ *run\b", lines[j])), len(lines))
    return "".join(lines[start:end])


def missing_figures(cells: list[str], repo: Path = REPO) -> list[str]:
    """What is wrong with one row: no source, a source that is not there, no run named or
    a run the file does not hold, no figure, or each number that run does not hold."""
    sources = [m for cell in cells for m in SOURCE.findall(cell)]
    if len(sources) != 1:
        return [f"names {len(sources)} results files, not one: {cells}"]
    source, run = sources[0]
    path = repo / source
    if not path.is_file():
        return [f"{source} does not exist"]
    if not run:
        return [f"{source} names no run (`{source}` (run ...)): {cells[0]}"]
    text = run_text(path.read_text(encoding="utf-8"), run)
    if text is None:
        return [f"{source} has no run {run!r}"]
    numbers = quoted_numbers(cells)
    if not numbers:
        return [f"quotes no figure: {cells}"]
    return [f"{n} is not in {source} ({run}) (row: {cells[0]})" for n in numbers
            if not appears(n, text)]


def test_every_headline_figure_is_in_the_file_its_row_names():
    rows = results_rows((REPO / "README.md").read_text(encoding="utf-8"))
    assert len(rows) >= MIN_ROWS, f"the headline table has {len(rows)} rows"
    problems = [p for cells in rows for p in missing_figures(cells)]
    assert not problems, "\n".join(problems)


def test_a_figure_that_is_not_in_its_file_is_caught():
    # the README once quoted 0.58 / 2.51 / 14.7 ms against this file's 1.54 / 3.70 / 16.63
    row = ["one-row, 8-row and 64-row forward (ms)", "0.58 / 2.51 / 14.7", "",
           "`benchmarks/results/decode_step_native.txt` (at 76f4a44)"]
    assert missing_figures(row) == [
        f"{n} is not in benchmarks/results/decode_step_native.txt (at 76f4a44) (row: {row[0]})"
        for n in ("0.58", "2.51", "14.7")]
    row[1] = "1.54 / 3.70 / 16.63"
    assert missing_figures(row) == []


def test_a_number_matches_only_as_a_whole():
    assert appears("1.54", "native 1.54 / 1.55")
    assert not appears("1.54", "11.54 1.545 1.54.2")
    assert appears("0", "0 differ")
    assert not appears("0", "10 20.5")


def test_a_row_without_a_single_existing_source_is_refused():
    assert "names 0 results files" in missing_figures(["x", "1.0", ""])[0]
    assert "does not exist" in missing_figures(
        ["x", "1.0", "`benchmarks/results/no_such_file.txt` (run 1)"])[0]
    assert "names no run" in missing_figures(
        ["x", "1.0", "`benchmarks/results/lossless.txt`"])[0]
    assert "has no run" in missing_figures(
        ["x", "1.0", "`benchmarks/results/lossless.txt` (run 99)"])[0]
    assert "quotes no figure" in missing_figures(
        ["x", "", "`benchmarks/results/lossless.txt` (at 76f4a44)"])[0]


def test_a_figure_of_another_run_of_the_same_file_is_caught():
    text = "# run 1: at abc\nexact 10.8%\n# run 2: at def\nexact 11.2%\n"
    assert "10.8" in run_text(text, "run 1") and "11.2" not in run_text(text, "run 1")
    assert "11.2" in run_text(text, "run 2")
