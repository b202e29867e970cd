"""Monitor-guided decoding: per decoding path, whether the text sits at a trigger and which
tokens may come next. ``MonitorContext`` is shared by one completion; ``MonitorState`` is
immutable, so a fork is another reference. See docs/decisions/monitor-masks.md.
"""
from __future__ import annotations

import builtins
import inspect
import re
from dataclasses import dataclass, field
from typing import Callable
from functools import cached_property

from inkling.analysis.cursor_scope import CursorScope
from inkling.analysis.module_paths import resolve_relative
from inkling.analysis.python_scanner import ScanState
from inkling.analysis.resolver import MODULE_DUNDERS, Resolver, keyword_arguments
from inkling.analysis.symbol_index import SymbolIndex
from inkling.analysis.token_masks import MaskCache
from inkling.analysis.trigger_site import NONE, SiteReading, TriggerSite, site_reading


@dataclass
class MonitorContext:
    """What every state of one completion shares; ``masks`` is None without a vocabulary."""
    scope: CursorScope
    resolver: Resolver
    index: SymbolIndex
    masks: MaskCache | None = None
    statement_start_self: bool = False
    readable: Callable[[], tuple | None] | None = None   # names a free read may name
    _allowed: dict = field(default_factory=dict, repr=False)
    _members: dict = field(default_factory=dict, repr=False)
    _both: dict = field(default_factory=dict, repr=False)

    def allowed(self, site: TriggerSite) -> frozenset[str] | None:
        """The names that may come at ``site``; None when not known for certain."""
        key = (site.kind, site.target, site.level, site.used, site.statement_start)
        if key not in self._allowed:
            try:
                self._allowed[key] = self._resolve(site)
            except Exception:          # noqa: BLE001 - analysis never breaks decoding
                self._allowed[key] = None
        return self._allowed[key]

    def both(self, a, b):
        """``a & b`` of two cached masks, itself kept."""
        key = (id(a), id(b))
        found = self._both.get(key)
        if found is None or found[0] is not a or found[1] is not b:
            found = self._both[key] = (a, b, a & b)
        return found[2]

    def call_keywords(self, callee: str) -> frozenset | None:
        """The keyword arguments a call to ``callee`` takes; None when not known."""
        key = ("call-keywords", callee)
        if key not in self._allowed:
            try:
                found = keyword_arguments(self.resolver,
                                          self.scope.resolve_chain(self.resolver, callee))
                if found is None and "." not in callee and not self._bound_here(callee):
                    found = builtin_keywords(callee)
            except Exception:          # noqa: BLE001 - analysis never breaks decoding
                found = None
            self._allowed[key] = found
        return self._allowed[key]

    def _bound_here(self, name: str) -> bool:
        parts = self.free_names
        return parts is None or name in parts[-1] or name in self.scope.locals

    @cached_property
    def free_names(self) -> tuple[frozenset, ...] | None:
        """What a free read may name, in parts (None: not known, e.g. a star import)."""
        if self.readable is None:
            return None
        try:
            return self.readable()
        except Exception:          # noqa: BLE001 - analysis never breaks decoding
            return None

    def members_of(self, chain: str) -> frozenset[str] | None:
        if chain not in self._members:
            try:
                entity = self.scope.resolve_chain(self.resolver, chain)
                self._members[chain] = self.resolver.members(entity)
            except Exception:          # noqa: BLE001
                self._members[chain] = None
        return self._members[chain]

    def _resolve(self, site: TriggerSite) -> frozenset[str] | None:
        sym = self.scope.symbols
        if site.kind == "attribute":
            root = site.target.split(".")[0]
            if site.statement_start and not self.statement_start_self and \
                    root in (self.scope.self_name, self.scope.cls_name) and \
                    "." not in site.target:
                return None                  # ``self.x`` may be a new attribute's target
            return self.members_of(site.target)
        if site.kind in ("import", "from_module"):
            parent = resolve_relative(sym.module, sym.is_package, site.target, site.level) \
                if site.level else site.target
            if not parent:
                return None if site.level else self.index.top_level_modules()
            return self.index.submodules(parent) or None
        if site.kind == "from_import":      # a module's implicit attributes: never imported
            module = resolve_relative(sym.module, sym.is_package, site.target, site.level)
            found = self.resolver.module_members(module) if module else None
            return None if found is None else found - implicit_attributes(self.resolver,
                                                                          module)
        if site.kind == "keyword":
            entity = self.scope.resolve_chain(self.resolver, site.target)
            names = keyword_arguments(self.resolver, entity)
            return None if names is None else names - site.used
        return None


def implicit_attributes(resolver: Resolver, module: str) -> frozenset[str]:
    """The attributes every module has that ``module`` does not define itself."""
    sym = resolver.module(module)
    return MODULE_DUNDERS - set(sym.names) if sym is not None else MODULE_DUNDERS


def builtin_keywords(name: str) -> frozenset | None:
    """The keyword arguments builtin ``name`` takes; None if unknown or it takes ``**kwargs``."""
    fn = getattr(builtins, name, None)
    if fn is None or not callable(fn):
        return None
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    params = sig.parameters.values()
    if any(p.kind is p.VAR_KEYWORD for p in params):
        return None
    return frozenset(p.name for p in params
                     if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY))


_BINDS = re.compile(r"[=:]|\b(?:in|as|import|global|nonlocal)\b")
_BINDINGS = (re.compile(r"\bfor\s+(.+?)\s+in\b"), re.compile(r"\blambda\b([^:]*):"),
             re.compile(r"\bas\s+(\w+)"), re.compile(r"(\w+)\s*:="),
             re.compile(r"^\s*(?:async\s+)?(?:def|class)\s+(.*)"),
             re.compile(r"^\s*(?:from\s+\S+\s+)?import\s+(.*)"),
             re.compile(r"^\s*(?:global|nonlocal)\s+(.*)"),
             re.compile(r"^\s*([\w\s,*()\[\]]+?)\s*(?::[^=]*)?(?<![=!<>+\-*/%&|^@:])=(?!=)"))
_WORD = re.compile(r"(?<![\w.])[A-Za-z_]\w*")


def _bound_on(line: str, bound: frozenset) -> frozenset:
    """``bound`` and the names ``line`` binds (over-inclusive: a word in a target counts)."""
    found = set()
    for pattern in _BINDINGS:
        for m in pattern.finditer(line):
            found.update(_WORD.findall(m.group(1)))
    return bound | found if found - bound else bound


_NOT_YET = object()          # a value not computed yet (None is one)
_SELF_TARGETS = re.compile(r"\s*(\w+)\.\w+(?:\s*,\s*\1\.\w+)*\s*(?::[^=]*)?=(?!=)")
_SELF_NAME = re.compile(r"\b(\w+)\.(\w+)")


@dataclass(frozen=True)
class MonitorState:
    """One decoding path's monitor; ``advance`` returns a new state, ``mask()`` None or a shared
    ``torch.bool [vocab]``. ``assigned``: ``self``/``cls`` attributes this path set."""
    context: MonitorContext
    scan: ScanState
    assigned: frozenset = frozenset()
    bound: frozenset = frozenset()       # names this path has bound (``x = ``, ``for x in``)

    @classmethod
    def at(cls, context: MonitorContext, scan: ScanState) -> "MonitorState":
        """The state at the cursor, with what the cursor's line binds counted bound already."""
        state = cls(context, scan)
        if not scan.in_code or not scan.line:
            return state
        assigned = state._assigned_on(scan.line, frozenset()) if "=" in scan.line \
            and not scan.frames else frozenset()
        bound = _bound_on(scan.line, frozenset()) if _BINDS.search(scan.line) else frozenset()
        return cls(context, scan, assigned, bound)

    def advance(self, text: str) -> "MonitorState":
        """The state after ``text`` (an emitted token's text) is appended."""
        if not text:
            return self
        scan, assigned, bound = self.scan, self.assigned, self.bound
        for i, piece in enumerate(text.split("\n") if "\n" in text else (text,)):
            if i and scan.in_code and _BINDS.search(scan.line):   # each ended line, whole
                bound = _bound_on(scan.line, bound)
            scan = scan.advance(piece if i == 0 else "\n" + piece)
            if "=" in piece and not scan.frames and scan.in_code:
                assigned = self._assigned_on(scan.line, assigned)
            if scan.in_code and _BINDS.search(piece):
                bound = _bound_on(scan.line, bound)
        return self._next(scan, assigned, bound)

    def _next(self, scan: ScanState, assigned: frozenset, bound: frozenset) -> "MonitorState":
        """``MonitorState(self.context, scan, assigned, bound)`` without the frozen ``__init__``'s
        cost; nothing cached on ``self`` is carried over."""
        new = object.__new__(MonitorState)
        new.__dict__.update(context=self.context, scan=scan, assigned=assigned, bound=bound)
        return new

    def _assigned_on(self, line: str, assigned: frozenset) -> frozenset:
        m = _SELF_TARGETS.match(line)
        scope = self.context.scope
        if m is None or not m.group(1) or m.group(1) not in (scope.self_name, scope.cls_name):
            return assigned
        names = {attr for obj, attr in _SELF_NAME.findall(line[:m.end()]) if obj == m.group(1)}
        return assigned | names

    def advance_token(self, token_id: int) -> "MonitorState":
        """``advance`` with the token's decoded text (special tokens change nothing)."""
        masks = self.context.masks
        if masks is None:
            raise ValueError("this monitor has no vocabulary; use advance(text)")
        v = masks.vocab
        if not 0 <= token_id < v.size or v.special[token_id]:
            return self
        return self.advance(v.texts[token_id])

    @property
    def reading(self) -> SiteReading | None:
        """``site_reading`` of the scanner state (None outside code), kept in ``__dict__``
        because ``cached_property`` takes a lock on Python 3.11."""
        kept = self.__dict__.get("_reading", _NOT_YET)
        if kept is _NOT_YET:
            kept = self.__dict__["_reading"] = site_reading(self.scan)
        return kept

    @property
    def site(self) -> TriggerSite | None:
        """The trigger the text ends at, if any, resolved or not; kept on the state."""
        kept = self.__dict__.get("_site", _NOT_YET)
        if kept is _NOT_YET:
            reading = self.reading
            kept = self.__dict__["_site"] = None if reading is None else reading.trigger
        return kept

    @property
    def allowed(self) -> frozenset[str] | None:
        """The names allowed at the current trigger; None when unconstrained."""
        kept = self.__dict__.get("_allowed", _NOT_YET)
        if kept is _NOT_YET:
            kept = self.__dict__["_allowed"] = self._allowed_here()
        return kept

    def _allowed_here(self) -> frozenset[str] | None:
        site = self.site
        if site is None:
            return None
        found = self.context.allowed(site)
        if found is not None and self.assigned and site.kind == "attribute" and \
                site.target in (self.context.scope.self_name, self.context.scope.cls_name):
            found = found | self.assigned
        return found

    def forced_text(self) -> str:
        """The rest of the one allowed name the typed text leads to, else "": text the mask
        would force token by token, which the decoder may take in one step."""
        site, allowed = self.site, self.allowed
        if allowed is None or site is None or site.escape or (not site.typed and site.lead != NONE):
            return ""
        key = ("forced", id(allowed), site.typed)
        cache = self.context._allowed
        if key not in cache:
            found = [n for n in allowed if n.startswith(site.typed)]
            cache[key] = (found[0][len(site.typed):], allowed) if len(found) == 1 else ("", allowed)
        return cache[key][0]

    @property
    def active(self) -> bool:
        """A trigger resolved: the next tokens are constrained."""
        return self.allowed is not None

    def mask(self, device=None):
        """``torch.bool [vocab]`` of the tokens allowed next, or None for any token; shared and
        kept on the state, so never modify it in place (apply with ``steps.masked``)."""
        masks = self.context.masks
        if masks is None or not self.scan.in_code:
            return None
        kept = self.__dict__.get("_kept_mask")
        if kept is not None and kept[0] == device:
            return kept[1]
        found = self._mask(masks, device)
        self.__dict__["_kept_mask"] = (device, found)   # a cache beside the frozen fields
        return found

    def _mask(self, masks, device):
        site, allowed = self.site, self.allowed
        if allowed is not None:
            if not masks.has_prefix(allowed, site.typed) and not site.escape:
                return None                  # the path already left the names: no guess
            return masks.names_mask(allowed, site.typed, site.lead, site.escape, device)
        target = self._target_mask(site, device)
        if target is not False:
            return target
        dotted = None
        if site is None and masks.vocab.dotted:
            chain = self.reading.pending
            members = self.context.members_of(chain) if chain else None
            if members is not None and self.assigned and \
                    chain in (self.context.scope.self_name, self.context.scope.cls_name):
                members = members | self.assigned
            if members is not None:
                dotted = masks.dotted_mask(members, device)
        read = self._read_mask(device) if site is None else None
        if read is None or dotted is None:
            return dotted if read is None else read
        return self.context.both(read, dotted)

    def _read_mask(self, device):
        """Where only a bound name may be read: those the completion knows or this path bound."""
        found = self.reading.read
        names = self.context.free_names if found is not None else None
        if names is None:
            return None
        extra, keyword_arg = self.bound.difference(*names), found.keyword_arg
        if keyword_arg:
            keywords = self.context.call_keywords(found.callee)
            if keywords is not None:         # the callee's keywords are known: only they
                extra, keyword_arg = extra | keywords.difference(*names), False
        return self.context.masks.read_mask(names + (extra,) if extra else names, found.typed,
                                            found.after_keyword, keyword_arg, device)

    def _target_mask(self, site, device):
        """At a statement starting ``self.``: a member or a new assigned attribute; else False."""
        ctx, masks = self.context, self.context.masks
        if ctx.statement_start_self:
            return False                     # then ``self.`` takes members only (allowed)
        owners = (ctx.scope.self_name, ctx.scope.cls_name)
        if site is not None:
            if site.kind != "attribute" or not site.statement_start or \
                    site.target not in owners or not site.target:
                return False
            members = self._members(site.target)
            return None if members is None else masks.target_mask(members, site.typed, device)
        ended = self.reading.target
        if ended is not None and ended[0] and ended[0] in owners:
            members = self._members(ended[0])
            if members is None or ended[1] in members:
                return None
            return masks.ended_target_mask(device)
        receiver = self.reading.receiver
        if receiver and receiver in owners and masks.vocab.dotted:
            members = self._members(receiver)
            return None if members is None else masks.dotted_target_mask(members, device)
        return False

    def _members(self, owner: str) -> frozenset | None:
        members = self.context.members_of(owner)
        return None if members is None else members | self.assigned
