"""Where a suggestion ends (docs/decisions/stop-rules.md).
A line, or a block where the cursor opens an empty one; before a degenerate loop; less text that
repeats what follows the cursor."""
from __future__ import annotations

import re
from dataclasses import dataclass, replace

from inkling.analysis.indentation import indent_width

BLOCK_OPENERS = (":", "{", "(", "[")
LOOP_REPEATS = 6          # a unit of 2 to 16 characters repeated this often at the end
_LOOP = re.compile(r"(.{2,16}?)\1{%d,}$" % (LOOP_REPEATS - 1), re.S)
_LOOP_WINDOW = 16 * LOOP_REPEATS + 16


def loop_start(text: str) -> int | None:
    """Where a degenerate loop ends ``text`` (``.0.0.0.0.0.0``; not ``======``), or None."""
    base = max(0, len(text) - _LOOP_WINDOW)
    m = _LOOP.search(text, base)
    if m is None or len(set(m.group(1).strip())) < 2:
        return None
    return m.start()


def _next_nonblank(text: str) -> str | None:
    for line in text.split("\n"):
        if line.strip():
            return line
    return None


@dataclass(frozen=True)
class StopRule:
    """``block``: lines until one dedents below ``indent``; ``max_lines``: a cap (the lead's)."""
    block: bool
    line_prefix: str          # the cursor line's text before the cursor
    indent: int = 0           # the block body's minimum indentation
    max_lines: int | None = None

    def cut(self, text: str, final: bool = False) -> int | None:
        """Where ``text`` must end, or None to go on decoding.
        ``final``: the text is complete (a block sheds its trailing blank lines). Loops are cut."""
        end = self._cut(text, final)
        if self.max_lines is not None:
            at = _nth_line_end(text, self.max_lines)
            if at is not None and (end is None or at < end):
                end = _rstrip_blank(text, at) if self.block else at
        return end

    def capped(self, lines: int) -> "StopRule":
        """This rule, ending drafts after ``lines`` lines at most."""
        return replace(self, max_lines=max(1, lines))

    def _cut(self, text: str, final: bool) -> int | None:
        loop = loop_start(text)
        if loop is not None:
            text = text[:loop]
            final = True
        if not self.block:
            nl = text.find("\n")
            return nl if nl >= 0 else (len(text) if final else None)
        full = self.line_prefix + text
        offset = -len(self.line_prefix)
        lines = full.split("\n")
        for i, line in enumerate(lines):
            if i > 0 and line.strip() and indent_width(line) < self.indent:
                return _rstrip_blank(text, max(0, offset))
            offset += len(line) + 1
        return _rstrip_blank(text, len(text)) if final else None


def line_count(text: str) -> int:
    """Lines of a finished draft (an empty one has one)."""
    return text.count("\n") + 1


def _nth_line_end(text: str, n: int) -> int | None:
    """Where the ``n``-th line of ``text`` ends (its line break), or None if it has not."""
    at = -1
    for _ in range(n):
        at = text.find("\n", at + 1)
        if at < 0:
            return None
    return at


def _rstrip_blank(text: str, end: int) -> int:
    """Drop trailing blank lines (and the last line break) before ``end``."""
    kept = text[:end].rstrip(" \t\n")
    return len(kept)


def stop_rule_for(line_prefix: str, prefix: str, line_suffix: str, suffix: str) -> StopRule:
    """Block mode when the cursor opens an empty block; line mode otherwise."""
    if line_suffix.strip():
        return StopRule(False, line_prefix)
    after_lines = suffix.split("\n", 1)[1] if "\n" in suffix else ""
    following = _next_nonblank(after_lines)
    if line_prefix.rstrip().endswith(BLOCK_OPENERS) and line_prefix.strip():
        header_indent = indent_width(line_prefix)
    elif not line_prefix.strip():
        before = prefix[:len(prefix) - len(line_prefix)].rstrip("\n").split("\n")
        header = next((ln for ln in reversed(before) if ln.strip()), "")
        if not header.rstrip().endswith(BLOCK_OPENERS):
            return StopRule(False, line_prefix)
        header_indent = indent_width(header)
    else:
        return StopRule(False, line_prefix)
    if following is not None and indent_width(following) > header_indent:
        return StopRule(False, line_prefix)   # the block already has a body
    return StopRule(True, line_prefix, header_indent + 1)


def trim_repeated_suffix(text: str, line_suffix: str, suffix: str) -> str:
    """``text`` less its overlap with the cursor line's rest; "" if it is the lines that follow."""
    tail = line_suffix.rstrip()
    if tail and "\n" not in text:
        for k in range(min(len(text), len(tail)), 0, -1):
            if text.endswith(tail[:k]) and (k == len(tail) or not tail[:k].isalnum()):
                return text[:-k]
        return text
    if not line_suffix.strip():
        after = suffix.split("\n", 1)[1] if "\n" in suffix else ""
        ours = [ln.rstrip() for ln in text.strip("\n").split("\n") if ln.strip()]
        theirs = [ln.rstrip() for ln in after.split("\n") if ln.strip()][:len(ours)]
        if ours and [o.strip() for o in ours] == [t.strip() for t in theirs]:
            return ""
    return text


def repeats_line_above(text: str, line_prefix: str, line_suffix: str, prefix: str) -> bool:
    """Whether ``text`` makes the cursor's line the non-blank line above again (not a comment)."""
    first, _, rest = text.partition("\n")
    line = (line_prefix + first + ("" if rest else line_suffix)).rstrip()
    if not first.strip() or line.lstrip().startswith(("#", "//", "...")):
        return False
    above = prefix[:len(prefix) - len(line_prefix)].rstrip("\n").split("\n")
    return line == next((ln.rstrip() for ln in reversed(above) if ln.strip()), None)
