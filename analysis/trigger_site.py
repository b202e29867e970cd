"""Where a monitor triggers, read off the scanner state: after ``obj.``, in imports, at keyword
arguments and at free-name reads. A site says what kind of name may come and what is typed of it;
which names those are is ``MonitorContext.allowed``'s business.
"""
from __future__ import annotations

import re
import string
from dataclasses import dataclass

from inkling.analysis.python_scanner import ScanState

_CHAIN = r"(?<![\w.)\]}'\"])((?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*)"
_ATTRIBUTE = re.compile(_CHAIN + r"\.(\w*)$")
_PENDING = re.compile(_CHAIN + r"$")
_FROM_IMPORT = re.compile(r"^\s*from\s+(\.*)([\w.]*)\s+import\b(.*)$")
_IMPORT_LIST = re.compile(r"^(\s+)(?:\w+(?:\s+as\s+\w+)?\s*,\s*)*(\w*)$")
_IMPORT = re.compile(r"^\s*import\b(\s*)((?:[\w.]+(?:\s+as\s+\w+)?\s*,\s*)*)([\w.]*)$")
_FROM = re.compile(r"^\s*from\b(\s*)(\.*)([\w.]*)$")
_IN_PARENS = re.compile(r"(?:^|[(,])\s*(\w*)$")
_ARG = re.compile(r"^\s*(\w*)$")

# Searches for a pattern that ends the line start where it may start, not at the line's start.
_IMPORT_START = re.compile(r"\s*(?:import|from)\b")
_WORD_CHARS = string.ascii_letters + string.digits + "_"
_CHAIN_CHARS = _WORD_CHARS + "."


def _run_start(line: str, chars: str) -> int:
    """Where the run of ``chars`` that ends ``line`` starts; 0 after a non-ASCII word character."""
    start = len(line.rstrip(chars))
    return 0 if start and line[start - 1].isalnum() else start


NONE, OPTIONAL, REQUIRED = "none", "optional", "required"     # whitespace before the name


@dataclass(frozen=True)
class TriggerSite:
    kind: str                  # "attribute" | "import" | "from_module" | "from_import" | "keyword"
    target: str                # receiver chain, parent module, or callee ('' for top level)
    typed: str                 # identifier characters typed since the trigger
    lead: str = NONE           # whitespace before the name: none | optional | required
    escape: bool = False       # a non-identifier character may come instead of a name
    level: int = 0             # leading dots of a relative module
    used: frozenset = frozenset()   # keyword arguments already given
    statement_start: bool = False   # the receiver begins the statement (a target, maybe)


def trigger_site(scan: ScanState) -> TriggerSite | None:
    """The trigger the end of the scanned text sits at, if any."""
    if not scan.in_code:
        return None
    line = scan.line
    top = scan.top
    if top is not None and top.import_from is not None and len(scan.frames) == 1:
        m = _IN_PARENS.search(line)
        if m:
            level = len(top.import_from) - len(top.import_from.lstrip("."))
            return TriggerSite("from_import", top.import_from.lstrip("."), m.group(1),
                               OPTIONAL if not m.group(1) else NONE, True, level)
        return None
    if not scan.frames and _IMPORT_START.match(line):
        return _statement_site(line)         # an import statement: its site, or none
    m = _ATTRIBUTE.search(line, _run_start(line, _CHAIN_CHARS))
    if m:
        start = not scan.frames and not line[:m.start()].strip()
        return TriggerSite("attribute", m.group(1), m.group(2), statement_start=start)
    if top is not None and top.opener == "(" and top.callee and top.keyword_seen:
        a = _ARG.match(top.arg)
        if a:
            return TriggerSite("keyword", top.callee, a.group(1),
                               OPTIONAL if not a.group(1) else NONE, True,
                               used=top.keywords)
    return None


def pending_chain(scan: ScanState) -> str | None:
    """The dotted chain the text ends with, when a ``.`` next would trigger (a ``.append`` token
    holds the trigger and the name at once)."""
    if not scan.in_code:
        return None
    if not scan.frames and _IMPORT_START.match(scan.line):
        return None
    if scan.top is not None and scan.top.import_from is not None:
        return None
    m = _PENDING.search(scan.line, _run_start(scan.line, _CHAIN_CHARS))
    if not m:
        return None
    if not scan.frames and not scan.line[:m.start()].strip() and "." not in m.group(1):
        return None            # a statement's first name: maybe an assignment target
    return m.group(1)


_FIRST_NAME = re.compile(r"^\s*([A-Za-z_]\w*)$")
_TARGET_BLANK = re.compile(r"^\s*([A-Za-z_]\w*)\.([A-Za-z_]\w*)[ \t]+$")


def statement_receiver(scan: ScanState) -> str | None:
    """The name a statement starts with, when the text ends right after it."""
    if not scan.in_code or scan.frames:
        return None
    m = _FIRST_NAME.match(scan.line)
    return m.group(1) if m else None


def statement_target(scan: ScanState) -> tuple[str, str] | None:
    """(receiver, name) when a statement starts ``receiver.name`` followed by blanks."""
    if not scan.in_code or scan.frames:
        return None
    m = _TARGET_BLANK.match(scan.line)
    return (m.group(1), m.group(2)) if m else None


def _statement_site(line: str) -> TriggerSite | None:
    m = _FROM_IMPORT.match(line)
    if m:
        rest = m.group(3)
        level = len(m.group(1))
        if not rest:
            return TriggerSite("from_import", m.group(2), "", REQUIRED, True, level)
        names = _IMPORT_LIST.match(rest)
        if names is None:
            return None
        lead = OPTIONAL if not names.group(2) else NONE
        return TriggerSite("from_import", m.group(2), names.group(2), lead, True, level)
    m = _IMPORT.match(line)
    if m:
        if not m.group(1) and not m.group(2) and not m.group(3):
            return TriggerSite("import", "", "", REQUIRED)
        if not m.group(1) and not m.group(2):
            return None
        parent, _, typed = m.group(3).rpartition(".")
        lead = OPTIONAL if not m.group(3) else NONE
        return TriggerSite("import", parent, typed, lead)
    m = _FROM.match(line)
    if m:
        dots, dotted = m.group(2), m.group(3)
        if not m.group(1) and not dots and not dotted:
            return TriggerSite("from_module", "", "", REQUIRED)
        if not m.group(1) and (dots or dotted):
            return None
        parent, _, typed = dotted.rpartition(".")
        lead = OPTIONAL if not dots and not dotted else NONE
        return TriggerSite("from_module", parent, typed, lead, bool(dots) and not dotted,
                           len(dots))
    return None


# ---------------------------------------------------------------- free name reads
_READ_KEYWORDS = frozenset({"return", "if", "elif", "while", "not", "and", "or", "in", "is",
                            "assert", "yield", "await", "del", "raise", "else", "with",
                            "except", "from"})
_TYPED = re.compile(r"(?<![\w.])([A-Za-z_]\w*)?$")
_LAST_WORD = re.compile(r"(?<![\w.])([A-Za-z_]\w*)$")
_BINDING_LINE = re.compile(
    r"^\s*(?:async\s+)?(?:def|class|import|from|global|nonlocal|case|match|type)\b")
_BINDING_END = re.compile(r"\b(?:as|global|nonlocal|import|lambda|for|def|class)$")
_LAMBDA_OPEN = re.compile(r"\blambda\b[^:]*$")
_FOR_OPEN = re.compile(r"\bfor\b(?:(?!\bin\b).)*$")
_ASSIGNED = re.compile(r"(?<![=!<>:])=(?!=)")
_OPERATOR_END = re.compile(r"(?:[-+*/%@&|^~<>!=]|:=)$")
# Callees that may take one generator expression: their first argument may read a
# comprehension's variable before its ``for`` binds it.
GENERATOR_TAKERS = frozenset({
    "sum", "any", "all", "join", "list", "tuple", "set", "frozenset", "dict", "sorted",
    "min", "max", "next", "extend", "update", "Counter", "deque", "iter", "enumerate", "zip",
    "map", "filter", "reversed", "OrderedDict", "defaultdict", "array", "bytes", "bytearray",
    "str", "print", "write", "writelines", "append", "add", "format", "fromkeys"})


@dataclass(frozen=True)
class ReadSite:
    """Where the text ends at a name that can only be read (``return |``, ``f(a, |``), so it must
    be bound, unless ``keyword_arg``; ``after_keyword``: the text ends at the keyword itself."""
    typed: str                 # identifier characters typed of the name so far
    after_keyword: bool = False
    keyword_arg: bool = False
    callee: str = ""           # the call's, when ``keyword_arg``


def read_site(scan: ScanState) -> ReadSite | None:
    """The free-name read the end of the scanned text sits at, if it certainly is one."""
    if not scan.in_code:
        return None
    line = scan.line
    m = _TYPED.search(line, _run_start(line, _WORD_CHARS))
    if m is None:
        return None
    typed, before = m.group(1) or "", line[:m.start()]
    if typed in _READ_KEYWORDS and _read_context(scan, before + typed + " ") is not None:
        return ReadSite("", after_keyword=True)
    context = _read_context(scan, before)
    if context is None:
        return None
    return ReadSite(typed, keyword_arg=context, callee=scan.top.callee if context else "")


def _read_context(scan: ScanState, before: str) -> bool | None:
    """None when a name after ``before`` may be other than a read; else whether it may be a
    keyword."""
    stripped = before.rstrip(" \t")
    if not stripped.strip() or _BINDING_LINE.match(before) or _BINDING_END.search(stripped) \
            or _LAMBDA_OPEN.search(before) or _FOR_OPEN.search(before):
        return None
    operator = bool(_OPERATOR_END.search(stripped)) or _keyword_end(stripped)
    if not scan.frames:
        if stripped.endswith(","):
            return False if _ASSIGNED.search(before) else None      # a target list?
        if operator and not stripped.lstrip().startswith(("*", "@")):
            return False
        return None
    top = scan.top
    if top.kind in ("params", "import") or any(
            f.commas == 0 and (f.kind in ("display", "group") or
                               f.kind == "call" and f.callee.rsplit(".", 1)[-1] in
                               GENERATOR_TAKERS) for f in scan.frames):
        return None                  # parameters, or a comprehension's element maybe
    if top.kind == "call" and stripped.endswith(("(", ",")):
        return True                  # a new argument: maybe ``name=``
    if operator or stripped.endswith((",", ":")) or \
            top.kind == "subscript" and stripped.endswith("["):
        return False
    return None


def _keyword_end(stripped: str) -> bool:
    w = _LAST_WORD.search(stripped)
    if w is None or w.group(1) not in _READ_KEYWORDS:
        return False
    return w.group(1) != "from" or not stripped.lstrip().startswith("from")


# ---------------------------------------------------------------- one state's sites, kept
READINGS_KEPT = 8192          # readings kept; all forgotten together when full
_READINGS: dict = {}          # (line, frames) -> SiteReading


class SiteReading:
    """The functions above for one scanner state in code, each computed when first read.

    They read only the state's line and frames, so readings are kept by those and shared across
    steps and completions: the regular expressions run from cold caches after each forward
    (docs/decisions/monitor-masks.md)."""

    __slots__ = ("scan", "_trigger", "_pending", "_read", "_target", "_receiver")

    def __init__(self, scan: ScanState):
        self.scan = scan
        self._trigger = self._pending = self._read = self._target = self._receiver = _UNREAD

    @property
    def trigger(self) -> TriggerSite | None:
        if self._trigger is _UNREAD:
            self._trigger = trigger_site(self.scan)
        return self._trigger

    @property
    def pending(self) -> str | None:
        if self._pending is _UNREAD:
            self._pending = pending_chain(self.scan)
        return self._pending

    @property
    def read(self) -> ReadSite | None:
        if self._read is _UNREAD:
            self._read = read_site(self.scan)
        return self._read

    @property
    def target(self) -> tuple[str, str] | None:
        if self._target is _UNREAD:
            self._target = statement_target(self.scan)
        return self._target

    @property
    def receiver(self) -> str | None:
        if self._receiver is _UNREAD:
            self._receiver = statement_receiver(self.scan)
        return self._receiver


_UNREAD = object()            # a reading not computed yet (None is one)


def site_reading(scan: ScanState) -> SiteReading | None:
    """The readings of ``scan``, shared by states of the same line and frames; None outside code.
    Threads may share them: the functions are pure and the states immutable."""
    if not scan.in_code:
        return None
    key = (scan.line, scan.frames)
    found = _READINGS.get(key)
    if found is None:
        if len(_READINGS) >= READINGS_KEPT:
            _READINGS.clear()
        found = _READINGS[key] = SiteReading(scan)
    return found


def forget_readings() -> None:
    """Forget every kept reading, as a new server starts."""
    _READINGS.clear()
