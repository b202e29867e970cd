"""An incremental lexical scanner for generated Python: code, string or comment; the current
line; open brackets with a call's callee and keywords. States are immutable, so a fork is free.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

MAX_LINE = 320          # characters of the current line kept
MAX_ARG = 96            # characters of a call's current argument kept
MAX_FRAMES = 64
_CALLEE = re.compile(r"(?<![\w.)\]}'\"])([A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)*)[ \t]*$")
_KWARG = re.compile(r"\s*([A-Za-z_]\w*)\s*=(?!=)")
_FROM_IMPORT = re.compile(r"^\s*from\s+(\.*[\w.]*)\s+import\s*$")
_NOT_CALLEES = frozenset({"if", "elif", "while", "for", "in", "not", "and", "or", "return",
                          "yield", "assert", "del", "with", "as", "else", "lambda",
                          "await", "is", "import", "from", "raise", "except", "case", "match"})
_SUBSCRIPTED = re.compile(r"[\w)\]}'\"][ \t]*$")
_KEYWORD_END = re.compile(r"(?<![\w.])(?:in|is|not|and|or|return|yield|if|elif|else|while|"
                          r"assert|await|del|lambda|with|for|from|print)[ \t]*$")
_STRING_PREFIX = re.compile(r"(?<![\w])([rRbBuUfF]{1,2})$")


def replace(state, **changes):
    """``dataclasses.replace`` for the frozen scanner states as a dict copy, skipping the
    generated ``__init__``'s costly frozen assignments."""
    new = object.__new__(type(state))
    fields = new.__dict__
    fields.update(state.__dict__)
    fields.update(changes)
    return new


@dataclass(frozen=True)
class Frame:
    """An open bracket."""
    opener: str                         # "(" "[" "{"
    callee: str = ""                    # the dotted name called, for "(" after a name
    keywords: frozenset = frozenset()   # keyword arguments given so far
    keyword_seen: bool = False          # a keyword argument or ** was given
    arg: str = ""                       # the current argument's text so far (capped)
    import_from: str | None = None      # module of ``from m import (``
    kind: str = "group"                 # call | params | import | subscript | display | group
    commas: int = 0                     # commas at this bracket's top level so far


@dataclass(frozen=True)
class ScanState:
    line: str = ""                      # the current physical line so far (tail)
    mode: str = "code"                  # "code" | "comment" | "string"
    quote: str = ""                     # the open string's delimiter
    raw: bool = False
    formatted: bool = False             # the open string is an f-string (its braces hold code)
    escape: bool = False
    closing: int = 0                    # quote characters seen toward a triple close
    pending: str = ""                   # quote characters seen in code (maybe a triple)
    frames: tuple[Frame, ...] = ()

    @property
    def in_code(self) -> bool:
        return self.mode == "code" and not self.pending

    @property
    def top(self) -> Frame | None:
        return self.frames[-1] if self.frames else None

    def advance(self, text: str) -> "ScanState":
        """The state after ``text``: runs of ordinary characters are taken in bulk, the
        characters that change the state one at a time."""
        s, i, n = self, 0, len(text)
        while i < n:
            if s.pending:
                s, i = _step(s, text[i]), i + 1
                continue
            found = _SPECIAL[s.quote[:1] if s.mode == "string" else s.mode].search(text, i)
            j = found.start() if found else n
            if j > i:
                s = _plain(s, text[i:j])
            if found:
                s = _step(s, text[j])
            i = j + 1
        return s


_SPECIAL = {"code": re.compile(r"""["'#\n()\[\]{},\\]"""), "comment": re.compile(r"\n"),
            '"': re.compile(r'["\\\n]'), "'": re.compile(r"['\\\n]")}


def _plain(s: ScanState, run: str) -> ScanState:
    """Characters that change nothing but the line (and a call's current argument)."""
    line = s.line + run
    if len(line) > MAX_LINE:
        line = line[-MAX_LINE:]
    if s.escape or s.closing:
        s = replace(s, escape=False, closing=0)
    frames = s.frames
    if s.mode == "code" and frames and frames[-1].opener == "(" and len(frames[-1].arg) < MAX_ARG:
        frames = frames[:-1] + (replace(frames[-1], arg=(frames[-1].arg + run)[:MAX_ARG]),)
    return replace(s, line=line, frames=frames)


def _step(s: ScanState, ch: str) -> ScanState:
    if s.pending:
        s, consumed = _resolve_pending(s, ch)
        if consumed:
            return s
    if s.mode == "string":
        return _string_char(s, ch)
    if s.mode == "comment":
        return replace(s, mode="code", line="") if ch == "\n" else replace(s, line=s.line + ch)
    return _code_char(s, ch)


def _resolve_pending(s: ScanState, ch: str) -> tuple[ScanState, bool]:
    """(state, whether ``ch`` was used) after quotes seen in code: a third opens a triple
    string; else one opens a one-line string and two close an empty one."""
    q = s.pending
    if ch == q[0]:
        if len(q) == 2:
            return replace(s, pending="", mode="string", quote=q[0] * 3, closing=0,
                           line=s.line + ch), True
        return replace(s, pending=q + ch, line=s.line + ch), True
    if len(q) == 1:
        return replace(s, pending="", mode="string", quote=q, closing=0), False
    return replace(s, pending=""), False


def _string_char(s: ScanState, ch: str) -> ScanState:
    line = "" if ch == "\n" else s.line + ch
    if s.escape:
        return replace(s, escape=False, line=line)
    if ch == "\\" and not s.raw:
        return replace(s, escape=True, line=line)
    if len(s.quote) == 3:
        if ch == s.quote[0]:
            if s.closing + 1 == 3:
                return replace(s, mode="code", quote="", closing=0, line=line)
            return replace(s, closing=s.closing + 1, line=line)
        return replace(s, closing=0, line=line)
    if ch == s.quote:
        return replace(s, mode="code", quote="", line=line)
    if ch == "\n":                           # an unterminated one-line string: recover
        return replace(s, mode="code", quote="", line="")
    return replace(s, line=line)


def _code_char(s: ScanState, ch: str) -> ScanState:
    if ch in "'\"":
        prefix = m.group(1).lower() if (m := _STRING_PREFIX.search(s.line)) else ""
        return replace(s, pending=ch, raw="r" in prefix, formatted="f" in prefix,
                       line=s.line + ch)
    if ch == "#":
        return replace(s, mode="comment", line=s.line + ch)
    if ch == "\n":
        return replace(s, line="", frames=s.frames if s.frames else ())
    if ch in "([{":
        return replace(s, line=s.line + ch, frames=_push(s, ch))
    if ch in ")]}":
        return replace(s, line=s.line + ch, frames=_pop(s.frames))
    if ch == "," and s.frames:
        top = replace(s.frames[-1], commas=s.frames[-1].commas + 1)
        if top.opener == "(":
            top = _next_arg(top)
        return replace(s, line=s.line + ch, frames=s.frames[:-1] + (top,))
    frames = s.frames
    if frames and frames[-1].opener == "(" and len(frames[-1].arg) < MAX_ARG:
        frames = frames[:-1] + (replace(frames[-1], arg=frames[-1].arg + ch),)
    return replace(s, line=s.line + ch, frames=frames)


def _push(s: ScanState, ch: str) -> tuple[Frame, ...]:
    if len(s.frames) >= MAX_FRAMES:
        return s.frames
    frames = s.frames
    if frames and frames[-1].opener == "(" and len(frames[-1].arg) < MAX_ARG:
        frames = frames[:-1] + (replace(frames[-1], arg=frames[-1].arg + ch),)
    if ch == "{":
        return frames + (Frame(ch, kind="display"),)
    if ch == "[":
        indexed = _SUBSCRIPTED.search(s.line) and not _KEYWORD_END.search(s.line)
        return frames + (Frame(ch, kind="subscript" if indexed else "display"),)
    imported = _FROM_IMPORT.match(s.line)
    if imported and not s.frames:
        return frames + (Frame(ch, import_from=imported.group(1), kind="import"),)
    if s.line.lstrip().startswith(("def ", "async def ", "class ")) and not s.frames:
        return frames + (Frame(ch, kind="params"),)
    m = _CALLEE.search(s.line)
    callee = m.group(1) if m and m.group(1).split(".")[0] not in _NOT_CALLEES else ""
    return frames + (Frame(ch, callee=callee, kind="call" if callee else "group"),)


def _pop(frames: tuple[Frame, ...]) -> tuple[Frame, ...]:
    return frames[:-1] if frames else frames


def _next_arg(f: Frame) -> Frame:
    """A ``,`` at a call's top level: note the argument just finished if it was a keyword."""
    m = _KWARG.match(f.arg)
    keywords, seen = f.keywords, f.keyword_seen
    if m:
        keywords, seen = keywords | {m.group(1)}, True
    elif f.arg.lstrip().startswith("**"):
        seen = True
    return replace(f, keywords=keywords, keyword_seen=seen, arg="")
