"""The product's code carries decisions, not the history of experiments (issue 68).

Measure. For every ``*.py`` under the packages in ``PACKAGES``: *docstring lines* are the lines of
a module's, class's or function's docstring (``ast``); *comment lines* are lines holding a comment
token and no code token (``tokenize``); *code lines* are the lines any other token spans, docstring
lines excepted. The ratio is (docstring + comment lines) / code lines, over all packages together,
and must be at most ``MAX_RATIO``.

Figures. A prose line (a docstring line or a comment, inline comments included) may not carry a
measurement: a number with a unit (ms, s, %, x, MB, GB, GiB), a percentile (p50, p95, p99), a run
marker (``run 7``, ``run-8``, ``step N of run``) or a commit hash. A measured choice points to its
record, ``docs/decisions/<slug>.md``, instead. The one exception is a line that states a *setting*
(a default or a limit the code itself enforces, e.g. "no file over 15 MB" next to the constant):
such a line is listed in ``ALLOWED`` by file and an exact substring, one entry a line, and the list
stays short. Strings that are not docstrings (option help, messages) are not prose here.

Records. Every ``docs/decisions/<slug>.md`` a package cites must exist (a separate test, since the
records are written apart from the code)."""
import ast
import io
import pathlib
import re
import tokenize

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGES = ("cli", "training", "evaluation", "lsp", "completion", "analysis", "cache", "runtime",
            "models")
MAX_RATIO = 0.15

COMMIT = re.compile(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,40}\b")
FIGURE = re.compile(
    r"\d+(\.\d+)?\s*(ms\b|s\b|%|x\b|MB\b|GB\b|GiB\b|MiB\b)|\bp(50|90|95|99)\b"
    r"|\brun[- ]\d+|\bstep \d+ of run")

# (file relative to the repository, exact substring of the line): settings, not measurements.
ALLOWED = {
    ("training/int8_convert.py", "no file over 15 MB"),
}

CITE = re.compile(r"docs/decisions/([a-z0-9-]+)\.md")


def _files():
    for package in PACKAGES:
        yield from sorted((ROOT / package).rglob("*.py"))


def _prose(path):
    """(docstring line numbers, {comment-only line: text}, code line numbers, [(line, text)] of
    every prose line: docstring lines and comments, inline ones included)."""
    source = path.read_text()
    lines = source.split("\n")
    doc = set()
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                and node.body and isinstance(node.body[0], ast.Expr)
                and isinstance(node.body[0].value, ast.Constant)
                and isinstance(node.body[0].value.value, str)):
            doc.update(range(node.body[0].lineno, node.body[0].end_lineno + 1))
    comments, code = {}, set()
    skip = (tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER)
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            comments[token.start[0]] = token.string
        elif token.type not in skip:
            code.update(n for n in range(token.start[0], token.end[0] + 1) if n not in doc)
    prose = [(n, lines[n - 1]) for n in sorted(doc)] + sorted(comments.items())
    return doc, {n: t for n, t in comments.items() if n not in code}, code, prose


def test_prose_to_code_ratio():
    doc = comment = code = 0
    for path in _files():
        d, c, k, _ = _prose(path)
        doc, comment, code = doc + len(d), comment + len(c), code + len(k)
    ratio = (doc + comment) / code
    assert ratio <= MAX_RATIO, (
        f"package prose/code {ratio:.3f} ({doc} docstring + {comment} comment lines over {code} "
        f"code lines) is over {MAX_RATIO}: say what the code does and why, and point a measured "
        "choice to docs/decisions/")


def test_no_figures_in_prose():
    found = []
    for path in _files():
        rel = path.relative_to(ROOT).as_posix()
        for number, text in _prose(path)[3]:
            if (FIGURE.search(text) or COMMIT.search(text)) and not any(
                    f == rel and s in text for f, s in ALLOWED):
                found.append(f"{rel}:{number}: {text.strip()}")
    assert not found, (f"{len(found)} prose lines carry figures (move them to a record in "
                       "docs/decisions/ and point to it):\n" + "\n".join(found))


def test_allowed_entries_are_used():
    """An entry of ALLOWED that no line matches any more is dropped, so the list stays short."""
    unused = set(ALLOWED)
    for path in _files():
        rel = path.relative_to(ROOT).as_posix()
        for _, text in _prose(path)[3]:
            unused -= {(f, s) for f, s in ALLOWED if f == rel and s in text}
    assert not unused, f"unused ALLOWED entries: {sorted(unused)}"


def test_cited_decision_records_exist():
    missing = set()
    for path in _files():
        for slug in CITE.findall(path.read_text()):
            if not (ROOT / "docs" / "decisions" / f"{slug}.md").exists():
                missing.add(f"{slug} (cited in {path.relative_to(ROOT).as_posix()})")
    assert not missing, "missing decision records: " + ", ".join(sorted(missing))
