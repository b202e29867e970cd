"""A small lexical scanner for C-like languages (JavaScript, TypeScript, Go, Rust, Java):
strings, comments and bracket depth, for stop rules. Immutable like ScanState."""
from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass(frozen=True)
class BraceScanState:
    mode: str = "code"        # code | line_comment | block_comment | string
    quote: str = ""
    escape: bool = False
    depth: int = 0            # open brackets since the scan started (may go negative)
    prev: str = ""            # the previous character

    @property
    def in_code(self) -> bool:
        return self.mode == "code"

    def advance(self, text: str) -> "BraceScanState":
        s = self
        for ch in text:
            s = _step(s, ch)
        return s


def _step(s: BraceScanState, ch: str) -> BraceScanState:
    prev = s.prev
    s = replace(s, prev=ch)
    if s.mode == "line_comment":
        return replace(s, mode="code") if ch == "\n" else s
    if s.mode == "block_comment":
        return replace(s, mode="code", prev="") if prev == "*" and ch == "/" else s
    if s.mode == "string":
        if s.escape:
            return replace(s, escape=False)
        if ch == "\\":
            return replace(s, escape=True)
        if ch == s.quote or (ch == "\n" and s.quote != "`"):
            return replace(s, mode="code", quote="")
        return s
    if prev == "/" and ch == "/":
        return replace(s, mode="line_comment")
    if prev == "/" and ch == "*":
        return replace(s, mode="block_comment", prev="")
    if ch in "\"`":
        return replace(s, mode="string", quote=ch)
    if ch == "'" and not prev.isalnum():       # a char literal, not Rust's 'a lifetime
        return replace(s, mode="string", quote=ch)
    if ch in "([{":
        return replace(s, depth=s.depth + 1)
    if ch in ")]}":
        return replace(s, depth=s.depth - 1)
    return s
