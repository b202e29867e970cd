"""Retype traces: a file's function bodies are removed, then typed back line by line with a
completion request before each line (and after mid-line triggers), small edits in between."""
from __future__ import annotations

import ast
import random
from dataclasses import dataclass

from inkling.completion.errors import InklingError

from inkling.evaluation.trace_builder import TraceBuilder, line_offsets
from inkling.evaluation.trace_file import Header

_NOTES = ("TODO: revisit", "note: keep in step with the caller", "FIXME: edge cases",
          "see the design notes", "XXX: temporary")


class RetypeError(InklingError):
    """A file that cannot be made into a retype trace (the message names it)."""


@dataclass(frozen=True)
class RetypeOptions:
    seed: int = 0
    max_functions: int = 8      # 0: every function
    mid_line: bool = True       # also ask just after triggers in a line (``obj.``, ``import ``)
    accept: bool = True         # an accept event after each completion


@dataclass(frozen=True)
class BodySpan:
    name: str
    header_start: int   # offset of the first line of the definition (decorators included)
    start: int          # offset of the body's first line
    end: int            # offset just after the body's last line (its line break included)


def _outermost_functions(tree: ast.AST):
    """Function definitions not nested in another function, in source order."""
    stack = [tree]
    while stack:
        node = stack.pop()
        for child in reversed(list(ast.iter_child_nodes(node))):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield child
            else:
                stack.append(child)


def _stmt_start_line(stmt: ast.stmt) -> int:
    decorators = getattr(stmt, "decorator_list", [])
    return min([stmt.lineno] + [d.lineno for d in decorators])


def _starts_its_line(lines: list[str], stmt: ast.stmt) -> bool:
    line = lines[stmt.lineno - 1].encode("utf-8")
    return not line[:stmt.col_offset].strip()


def function_bodies(text: str, source: str = "<text>") -> list[BodySpan]:
    """Bodies of outermost functions that start on a line of their own, in source order."""
    if "\r" in text.replace("\r\n", ""):
        raise RetypeError(f"{source}: lone carriage returns as line breaks are not supported")
    try:
        tree = ast.parse(text, filename=source)
    except SyntaxError as exc:
        raise RetypeError(f"{source}: not valid Python (line {exc.lineno}: {exc.msg})") from None
    offsets = line_offsets(text)
    lines = text.split("\n")
    spans = []
    for fn in sorted(_outermost_functions(tree), key=lambda f: f.lineno):
        first = fn.body[0]
        if first.lineno == fn.lineno or not _starts_its_line(lines, first):
            continue
        start_line = _stmt_start_line(first)
        spans.append(BodySpan(fn.name, offsets[_stmt_start_line(fn) - 1],
                              offsets[start_line - 1], offsets[fn.end_lineno]))
    return spans


def _pick(spans: list[BodySpan], rng: random.Random, limit: int) -> list[BodySpan]:
    if limit and len(spans) > limit:
        spans = rng.sample(spans, limit)
    return sorted(spans, key=lambda s: s.start)


def _strip(text: str, spans: list[BodySpan]) -> str:
    out, at = [], 0
    for s in spans:
        out.append(text[at:s.start])
        at = s.end
    return "".join(out) + text[at:]


def _note_line(text: str, at: int, rng: random.Random, eol: str) -> str:
    end = text.find("\n", at)
    line = text[at:end if end >= 0 else len(text)]
    indent = line[:len(line) - len(line.lstrip(" \t"))] if line.strip() else ""
    return f"{indent}# {rng.choice(_NOTES)}{eol}"


def _note_offset(text: str, avoid: tuple[int, int], rng: random.Random) -> int | None:
    """A line start outside [avoid[0], avoid[1]] (the function being typed), or None."""
    starts = [o for o in line_offsets(text)[:-1] if not avoid[0] <= o <= avoid[1]]
    return rng.choice(starts) if starts else None


def _retype_body(b: TraceBuilder, path: str, span: BodySpan, segment: str,
                 rng: random.Random, eol: str, options: RetypeOptions) -> None:
    """Type one body back, with a comment line added elsewhere before and removed after."""
    at = span.start
    note_at = _note_offset(b.text(path), (span.header_start, at), rng)
    note = ""
    if note_at is not None:
        note = _note_line(b.text(path), note_at, rng, eol)
        b.insert(path, note_at, note)
        b.check(path)
        at += len(note) if note_at < at else 0
    b.type_segment(path, at, segment, rng, options.mid_line, options.accept)
    if note_at is not None:
        note_at += len(segment) if note_at > at else 0
        b.delete(path, note_at, note_at + len(note))
    b.check(path)


def retype_trace(path: str, text: str, workspace: dict[str, str],
                 options: RetypeOptions = RetypeOptions()) -> TraceBuilder:
    """A retype trace of ``text`` (at workspace-relative ``path``); ``workspace`` holds
    other files (relative path -> text) that become ``file`` events."""
    rng = random.Random(f"{options.seed}:{path}")
    spans = _pick(function_bodies(text, path), rng, options.max_functions)
    if not spans:
        raise RetypeError(f"{path}: no function has a body on lines of its own")
    eol = "\r\n" if "\r\n" in text else "\n"
    name = "retype-" + path.replace("/", "-")
    b = TraceBuilder(Header(name, "python", description=(
        f"bodies of {len(spans)} functions of {path} removed, then typed back line by line "
        f"(seed {options.seed})")))
    for other, other_text in sorted(workspace.items()):
        if other != path:
            b.file(other, other_text)
    b.open(path, _strip(text, spans))
    for span in spans:
        _retype_body(b, path, span, text[span.start:span.end], rng, eol, options)
    if b.text(path) != text:
        raise AssertionError(f"{path}: the retyped text differs from the original")
    b.close(path)
    return b
