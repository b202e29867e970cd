"""The token masks as analysis/token_masks.py built them before issue 70 (per-name walks, unique
ids, every dense mask OR-ed afresh): the reference the equivalence tests compare the current
masks to. Kept as it was, over the vocabulary's tables as dicts and sets built here the way
analysis/vocabulary.py built them then (``ReferenceTables``); not package code."""
from __future__ import annotations

import bisect
import threading
from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np

from inkling.analysis.trigger_site import NONE, REQUIRED
from inkling.analysis.vocabulary import (STRING_PREFIXES, WHITESPACE, TokenVocabulary, ends_target,
                                         ident_head, is_ident_char)

_BASES = ("ends_identifier", "escape_plain", "escape_lead")


class ReferenceTables:
    """A vocabulary's lookup tables as dicts of id lists, sets of prefixes and lists of rows;
    its dense masks and texts read through from the vocabulary."""

    def __init__(self, vocab: TokenVocabulary):
        self._vocab = vocab
        self.exact, self.lead_exact, self.ends_with, self.lead_ends_with = {}, {}, {}, {}
        self.prefixes, self.lead_prefixes, self.dotted_prefixes = set(), set(), set()
        self.dotted, self.dotted_heads, self.name_starts = [], {}, []
        for tid, text in enumerate(vocab.texts):
            if not text or vocab.special[tid]:
                continue
            body = text.lstrip(WHITESPACE)
            lead = len(body) < len(text)
            if not body:
                continue
            (self.lead_exact if lead else self.exact).setdefault(body, []).append(tid)
            head = ident_head(body)
            if len(head) == len(body):
                (self.lead_prefixes if lead else self.prefixes).update(
                    body[:i] for i in range(1, len(body) + 1))
            else:
                (self.lead_ends_with if lead else self.ends_with).setdefault(head, []).append(tid)
            if text[0] == "." and len(text) > 1 and is_ident_char(text[1]):
                h = ident_head(text[1:])
                rest = len(h) + 1 < len(text)
                self.dotted.append((tid, h, rest))
                self.dotted_heads.setdefault(h, ([], []))[0 if rest else 1].append(tid)
                self.dotted_prefixes.update(h[:i] for i in range(1, len(h) + 1))
            named = text.lstrip(" \t")
            if named and is_ident_char(named[0]) and not named[0].isdigit():
                h = ident_head(named)
                self.name_starts.append((tid, h, len(h) < len(named), len(named) < len(text)))
        self.dotted_ids = np.array([d[0] for d in self.dotted], dtype=np.int64)

    def __getattr__(self, name):
        return getattr(self._vocab, name)


@dataclass(frozen=True)
class MaskRecipe:
    bases: tuple[str, ...]          # dense masks of the vocabulary OR-ed ("all": every token)
    ids: np.ndarray                 # token ids then set to ``value``
    value: bool = True

    def build(self, vocab: TokenVocabulary) -> np.ndarray:
        if "all" in self.bases:
            mask = np.ones(vocab.size, dtype=bool)
        else:
            mask = np.zeros(vocab.size, dtype=bool)
            for name in self.bases:
                mask |= getattr(vocab, name)
        if len(self.ids):
            mask[self.ids] = self.value
        return mask

    @property
    def nbytes(self) -> int:
        return int(self.ids.nbytes) + 64


@dataclass
class ReferenceMaskCache:
    vocab: TokenVocabulary
    max_bytes: int = 64 << 20                    # dense masks kept
    max_recipe_bytes: int = 32 << 20             # recipes kept
    _dense: OrderedDict = field(default_factory=OrderedDict, repr=False)
    _recipes: OrderedDict = field(default_factory=OrderedDict, repr=False)
    _recipe_bytes: int = 0
    _sorted: dict = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __post_init__(self):
        self.vocab = ReferenceTables(self.vocab)

    def names_mask(self, names: frozenset, typed: str, lead: str = NONE, escape: bool = False,
                   device=None):
        """The mask after a trigger allowing ``names``, ``typed`` typed of the current name."""
        key = ("names", names, typed, lead, escape)
        return self._cached(key, device, lambda: self._names_recipe(names, typed, lead, escape))

    def dotted_mask(self, names: frozenset, device=None):
        """After a resolvable receiver with no ``.`` yet: a ``.name`` token must start a member;
        None when the vocabulary has no such tokens."""
        if not self.vocab.dotted:
            return None
        return self._cached(("dotted", names), device, lambda: self._dotted_recipe(names))

    def target_mask(self, names: frozenset, typed: str, device=None):
        """After ``self.`` at a statement's start: a member, or a new name that ends a target."""
        key = ("target", names, typed)
        return self._cached(key, device, lambda: self._target_recipe(names, typed))

    def ended_target_mask(self, device=None):
        """After ``self.name`` and blanks, ``name`` no member: blanks or what ends a target."""
        return self._cached(("ended-target",), device,
                            lambda: MaskRecipe(("target_end", "blank"), np.zeros(0, np.int32)))

    def dotted_target_mask(self, names: frozenset, device=None):
        """``dotted_mask`` where the receiver starts a statement, so a new attribute may come."""
        if not self.vocab.dotted:
            return None
        return self._cached(("dotted-target", names), device,
                            lambda: self._dotted_recipe(names, targets=True))

    def read_mask(self, parts: tuple[frozenset, ...], typed: str, after_keyword: bool,
                  keyword_arg: bool, device=None):
        """Where only a bound name in ``parts`` may be read (each part's tokens kept apart, so a
        large unchanged part costs once); ``keyword_arg``: any name followed by ``=`` too.
        None when ``typed`` already left the names."""
        if typed and not keyword_arg and not any(self.has_prefix(p, typed)
                                                  for p in parts + (STRING_PREFIXES,)):
            return None
        key = ("read", parts, typed, after_keyword, keyword_arg)
        return self._cached(key, device, lambda: self._read_recipe(
            parts, typed, after_keyword, keyword_arg))

    def has_prefix(self, names: frozenset, typed: str) -> bool:
        """Some allowed name starts with ``typed``."""
        return bool(self._remaining(names, typed, limit=1))

    # ------------------------------------------------------------------ recipes
    def _names_recipe(self, names, typed, lead, escape) -> MaskRecipe:
        v = self.vocab
        rests = self._remaining(names, typed)
        ids: list[int] = []
        bases: list[str] = []
        if not typed and lead != NONE:
            ids.extend(v.ws_only.tolist())
            self._collect(ids, rests, v.lead_exact, v.lead_ends_with, v.lead_prefixes)
            if escape:
                bases.append("escape_lead")
        if typed or lead != REQUIRED:
            if "" in rests:
                bases.append("ends_identifier")
            self._collect(ids, rests, v.exact, v.ends_with, v.prefixes)
            if escape and not typed:
                bases.append("escape_plain")
        return MaskRecipe(tuple(bases), np.unique(np.asarray(ids, dtype=np.int32)))

    def _collect(self, ids: list, rests, exact: dict, ends_with: dict, prefixes: set) -> None:
        """Tokens that are a prefix of some ``r`` in ``rests``, or ``r`` and a name's end."""
        seen = set()
        for r in rests:
            for i in range(1, len(r) + 1):
                p = r[:i]
                if p not in prefixes:
                    break
                if p in seen:
                    continue
                seen.add(p)
                found = exact.get(p)
                if found:
                    ids.extend(found)
            if r:
                found = ends_with.get(r)
                if found:
                    ids.extend(found)

    def _target_recipe(self, names, typed) -> MaskRecipe:
        inner = self._names_recipe(names, typed, NONE, False)
        bases = set(inner.bases) | {"name_only", "name_target_end"}
        if typed and typed not in names:
            bases |= {"target_end", "blank"}
        elif typed:
            bases.add("ends_identifier")
        return MaskRecipe(tuple(sorted(bases)), inner.ids)

    def _read_recipe(self, parts, typed, after_keyword, keyword_arg) -> MaskRecipe:
        ids = np.unique(np.concatenate([self._read_ids(p, typed, after_keyword)
                                        for p in parts + (STRING_PREFIXES,)]))
        if after_keyword:
            return MaskRecipe(("not_blank_name", "string_start"), ids)
        bases = set()
        if not typed:
            bases |= {"not_name_start", "string_start"}
        if typed in STRING_PREFIXES:
            bases.add("quote_start")                  # f"...": a string, or a bound ``f``
        if typed and any(typed in p for p in parts):
            bases.add("ends_identifier")
        if keyword_arg:
            bases |= {"name_only", "name_assign_end", "assign_end"}
            if not typed:
                bases |= {"blank_name_only", "blank_name_assign_end"}
        return MaskRecipe(tuple(sorted(bases)), ids.astype(np.int32))

    def _read_ids(self, names, typed, after_keyword) -> np.ndarray:
        """Tokens that go on to one of ``names``, cached per names."""
        key = ("read-ids", names, typed, after_keyword)
        with self._lock:
            found = self._recipes.get(key)
        if found is not None:
            return found.ids
        v, ids = self.vocab, []
        if not typed and len(names) * 4 > len(v.name_starts):
            recipe = MaskRecipe((), self._scan_name_starts(names, after_keyword))
            self._keep_recipe(key, recipe)
            return recipe.ids
        rests = self._remaining(names, typed)
        if after_keyword or not typed:
            self._collect(ids, rests, v.lead_exact, v.lead_ends_with, v.lead_prefixes)
        if not after_keyword:
            self._collect(ids, rests, v.exact, v.ends_with, v.prefixes)
        recipe = MaskRecipe((), np.unique(np.asarray(ids, dtype=np.int32)))
        self._keep_recipe(key, recipe)
        return recipe.ids

    def _scan_name_starts(self, names, after_keyword: bool) -> np.ndarray:
        """``_read_ids`` with nothing typed for many names: each name-start token bisected
        into the names, cheaper than each name's prefixes looked up."""
        ordered = self._sorted.get(names)
        if ordered is None:
            ordered = self._sorted[names] = sorted(names)
        ids = []
        for tid, head, rest, blanks in self.vocab.name_starts:
            if after_keyword and not blanks:
                continue
            if rest:
                ok = head in names
            else:
                i = bisect.bisect_left(ordered, head)
                ok = i < len(ordered) and ordered[i].startswith(head)
            if ok:
                ids.append(tid)
        return np.asarray(ids, dtype=np.int32)

    def _dotted_recipe(self, names, targets: bool = False) -> MaskRecipe:
        """Every token but the ``.name`` tokens that fit no member (nor, with ``targets``, a
        target)."""
        v = self.vocab
        allowed: list[int] = []
        if targets:
            allowed.extend(tid for tid, head, rest in v.dotted
                           if not rest or ends_target(v.texts[tid][1 + len(head):]))
        for n in names:
            for i in range(1, len(n) + 1):
                p = n[:i]
                if p not in v.dotted_prefixes:
                    break
                found = v.dotted_heads.get(p)
                if found:
                    allowed.extend(found[1])                 # ".na" with nothing after
                    if i == len(n):
                        allowed.extend(found[0])             # ".name(" and the like
        keep = np.zeros(v.size, dtype=bool)
        keep[v.dotted_ids] = True
        if allowed:
            keep[np.asarray(allowed, dtype=np.int64)] = False
        return MaskRecipe(("all",), np.flatnonzero(keep).astype(np.int32), False)

    def _remaining(self, names: frozenset, typed: str, limit: int | None = None) -> list[str]:
        ordered = self._sorted.get(names)
        if ordered is None:
            ordered = self._sorted[names] = sorted(names)
            if len(self._sorted) > 256:
                self._sorted.pop(next(iter(self._sorted)))
        lo = bisect.bisect_left(ordered, typed)
        hi = bisect.bisect_left(ordered, typed + "\U0010ffff")
        if limit is not None:
            hi = min(hi, lo + limit)
        return [n[len(typed):] for n in ordered[lo:hi]]

    # ------------------------------------------------------------------- cache
    def _cached(self, key, device, make_recipe):
        dense_key = (key, "cpu" if device is None else str(device))
        with self._lock:
            found = self._dense.get(dense_key)
            if found is not None:
                self._dense.move_to_end(dense_key)
                return found
            recipe = self._recipes.get(key)
            if recipe is not None:
                self._recipes.move_to_end(key)
        if recipe is None:
            recipe = make_recipe()
            self._keep_recipe(key, recipe)
        return self._keep_dense(dense_key, recipe, device)

    def _keep_recipe(self, key, recipe: MaskRecipe) -> None:
        with self._lock:
            self._recipes[key] = recipe
            self._recipe_bytes += recipe.nbytes
            while self._recipe_bytes > self.max_recipe_bytes and len(self._recipes) > 1:
                _, old = self._recipes.popitem(last=False)
                self._recipe_bytes -= old.nbytes

    def _keep_dense(self, dense_key, recipe: MaskRecipe, device):
        import torch        # lazy: only dense masks need torch
        tensor = torch.from_numpy(recipe.build(self.vocab))
        if device is not None and str(device) != "cpu":
            tensor = tensor.to(device)
        with self._lock:
            self._dense[dense_key] = tensor
            limit = max(1, self.max_bytes // max(1, self.vocab.size))
            while len(self._dense) > limit:
                self._dense.popitem(last=False)
        return tensor
