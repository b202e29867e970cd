"""The first identifier right after a monitor trigger in a text (for ``identifier_match``):
``obj.name`` with a resolvable receiver, a name in ``import`` / ``from m import``, or a
keyword argument name in a call to a known function."""
from __future__ import annotations

import re
from dataclasses import dataclass

from inkling.analysis.monitor import MonitorState
from inkling.analysis.trigger_site import NONE, TriggerSite

_NAME = re.compile(r"[A-Za-z_]\w*")
_LEAD_NAME = re.compile(r"[ \t]*([A-Za-z_]\w*)")
_KEYWORD_AHEAD = re.compile(r"\s*([A-Za-z_]\w*)\s*=(?!=)")
_WHITESPACE_ARG = re.compile(r"\s*$")


@dataclass(frozen=True)
class TriggerIdentifier:
    trigger_end: int      # index just after the trigger (before any whitespace)
    name: str             # the identifier that follows it
    kind: str             # the trigger's kind


def name_after(text: str, at: int, lead: str = NONE) -> str | None:
    m = (_NAME if lead == NONE else _LEAD_NAME).match(text, at)
    if not m:
        return None
    return m.group(0) if lead == NONE else m.group(1)


def first_trigger_identifier(state: MonitorState, text: str, max_chars: int = 4000
                             ) -> TriggerIdentifier | None:
    """Advance ``state`` over ``text`` and return the first trigger whose names resolve
    and that ``text`` follows with an identifier."""
    for i in range(min(len(text), max_chars) + 1):
        site = state.site
        if site is not None and not site.typed and state.allowed is not None:
            name = name_after(text, i, site.lead)
            if name:
                return TriggerIdentifier(i, name, site.kind)
        keyword = _keyword_ahead(state, text, i)
        if keyword is not None:
            return keyword
        if i < len(text):
            state = state.advance(text[i])
    return None


def _keyword_ahead(state: MonitorState, text: str, i: int) -> TriggerIdentifier | None:
    """A first keyword argument (``f(a, key=``) that the monitor itself does not constrain."""
    top = state.scan.top
    if not state.scan.in_code or top is None or top.opener != "(" or not top.callee or \
            top.keyword_seen or not _WHITESPACE_ARG.match(top.arg):
        return None
    if i > 0 and text[i - 1] not in "(, \t\n" and top.arg == "":
        return None
    m = _KEYWORD_AHEAD.match(text, i)
    if not m:
        return None
    site = TriggerSite("keyword", top.callee, "", used=top.keywords)
    if state.context.allowed(site) is None:
        return None
    return TriggerIdentifier(i, m.group(1), "keyword")


def identifier_matches(draft: str, expected: str, found: TriggerIdentifier) -> bool:
    """The draft reaches the same trigger and follows it with the same identifier."""
    end = found.trigger_end
    if draft[:end] != expected[:end]:
        return False
    lead = NONE if found.kind == "attribute" else "optional"
    return name_after(draft, end, lead) == found.name
