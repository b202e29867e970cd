"""Token masks for a set of allowed names: a token is allowed when its text is a prefix of an
allowed name's rest, or completes one and then ends the identifier. Masks are shared
``torch.bool [vocab]`` tensors: never modify one in place.

Each is kept as a recipe (precomputed dense masks OR-ed, plus ids to set or clear; small, many
kept) and as the dense tensor built from it (fewer kept): docs/decisions/monitor-masks.md.
"""
from __future__ import annotations

import bisect
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np

from inkling.analysis.trigger_site import NONE, REQUIRED
from inkling.analysis.vocabulary import STRING_PREFIXES, TextIndex, TokenVocabulary, ends_target

_BASES = ("ends_identifier", "escape_plain", "escape_lead")
_NAME_CHARS = re.compile(r"\w*")     # what ``is_ident_char`` accepts: ``_`` and str.isalnum


@dataclass(frozen=True)
class MaskRecipe:
    bases: tuple[str, ...]          # dense masks of the vocabulary OR-ed ("all": every token)
    ids: np.ndarray                 # token ids then set to ``value``
    value: bool = True

    def build(self, vocab: TokenVocabulary, base: np.ndarray | None = None) -> np.ndarray:
        """The dense mask; ``base``, where given, is ``bases``' OR (copied, not changed)."""
        if base is not None:
            mask = base.copy()
        else:
            mask = bases_mask(vocab, self.bases)
        if len(self.ids):
            mask[self.ids] = self.value
        return mask

    @property
    def nbytes(self) -> int:
        return int(self.ids.nbytes) + 64


def bases_mask(vocab: TokenVocabulary, bases: tuple[str, ...]) -> np.ndarray:
    """bool [vocab]: the OR of ``bases``' dense masks (every token for "all")."""
    if "all" in bases:
        return np.ones(vocab.size, dtype=bool)
    mask = np.zeros(vocab.size, dtype=bool)
    for name in bases:
        mask |= getattr(vocab, name)
    return mask


@dataclass
class MaskCache:
    vocab: TokenVocabulary
    max_bytes: int = 64 << 20                    # dense masks kept
    max_recipe_bytes: int = 32 << 20             # recipes kept
    _dense: OrderedDict = field(default_factory=OrderedDict, repr=False)
    _recipes: OrderedDict = field(default_factory=OrderedDict, repr=False)
    _recipe_bytes: int = 0
    _sorted: dict = field(default_factory=dict, repr=False)
    _bases: dict = field(default_factory=dict, repr=False)       # bases -> their dense OR
    _target_dotted: np.ndarray | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

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
        ids: list[np.ndarray] = []
        bases: list[str] = []
        if not typed and lead != NONE:
            ids.append(v.ws_only)
            self._collect(ids, rests, v.lead_exact, v.lead_ends_with)
            if escape:
                bases.append("escape_lead")
        if typed or lead != REQUIRED:
            if "" in rests:
                bases.append("ends_identifier")
            self._collect(ids, rests, v.exact, v.ends_with)
            if escape and not typed:
                bases.append("escape_plain")
        return MaskRecipe(tuple(bases), _joined(ids))

    @staticmethod
    def _collect(ids: list, rests, exact: TextIndex, ends_with: TextIndex) -> None:
        """Tokens that are a prefix of some ``r`` in ``rests`` made of name characters, or
        ``r`` and a name's end."""
        seen = set()
        for r in rests:
            for i in range(1, _NAME_CHARS.match(r).end() + 1):
                p = r[:i]
                if p in seen:
                    continue
                found = exact.prefixed(p)
                if found is None:
                    break
                seen.add(p)
                if len(found):
                    ids.append(found)
            if r:
                found = ends_with.get(r)
                if len(found):
                    ids.append(found)

    def _target_recipe(self, names, typed) -> MaskRecipe:
        inner = self._names_recipe(names, typed, NONE, False)
        bases = set(inner.bases) | {"name_only", "name_target_end"}
        if typed and typed not in names:
            bases |= {"target_end", "blank"}
        elif typed:
            bases.add("ends_identifier")
        return MaskRecipe(tuple(sorted(bases)), inner.ids)

    def _read_recipe(self, parts, typed, after_keyword, keyword_arg) -> MaskRecipe:
        ids = np.concatenate([self._read_ids(p, typed, after_keyword)
                              for p in parts + (STRING_PREFIXES,)])     # repeats: harmless
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
            self._collect(ids, rests, v.lead_exact, v.lead_ends_with)
        if not after_keyword:
            self._collect(ids, rests, v.exact, v.ends_with)
        recipe = MaskRecipe((), _joined(ids))
        self._keep_recipe(key, recipe)
        return recipe.ids

    def _scan_name_starts(self, names, after_keyword: bool) -> np.ndarray:
        """``_read_ids`` with nothing typed for many names: each name-start token bisected
        into the names, cheaper than each name's prefixes looked up."""
        ordered = self._sorted.get(names)
        if ordered is None:
            ordered = self._sorted[names] = sorted(names)
        v = self.vocab
        starts = v.name_starts
        whole = (v.name_only | v.blank_name_only)[starts.ids].tolist()   # no more after the name
        texts, ids = v.texts, []
        for tid, blanks, n, alone in zip(starts.ids.tolist(), starts.starts.tolist(),
                                         starts.lengths.tolist(), whole):
            if after_keyword and not blanks:
                continue
            head = texts[tid][blanks:blanks + n]
            if not alone:
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
        allowed: list[np.ndarray] = []
        if targets:
            allowed.append(self._dotted_targets())
        for n in names:
            for i in range(1, len(n) + 1):
                found = v.dotted.prefixed(n[:i])
                if found is None:
                    break
                if len(found):
                    rest = v.dotted_rest[found]
                    allowed.append(found[~rest])             # ".na" with nothing after
                    if i == len(n):
                        allowed.append(found[rest])          # ".name(" and the like
        keep = np.zeros(v.size, dtype=bool)
        keep[v.dotted.ids] = True
        keep[_joined(allowed)] = False
        return MaskRecipe(("all",), np.flatnonzero(keep).astype(np.int32), False)

    def _dotted_targets(self) -> np.ndarray:
        """The ``.name`` tokens that are a name alone or end a target (once a vocabulary)."""
        if self._target_dotted is None:
            v = self.vocab
            self._target_dotted = np.array(
                [tid for tid, head in zip(v.dotted.ids.tolist(), v.dotted.keys)
                 if not v.dotted_rest[tid] or ends_target(v.texts[tid][1 + len(head):])],
                dtype=np.int32)
        return self._target_dotted

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

    def _base(self, bases: tuple[str, ...]) -> np.ndarray:
        """``bases_mask`` of ``bases``, kept: a few combinations recur."""
        with self._lock:
            found = self._bases.get(bases)
        if found is None:
            found = bases_mask(self.vocab, bases)
            with self._lock:
                self._bases[bases] = found
        return found

    def _keep_dense(self, dense_key, recipe: MaskRecipe, device):
        import torch        # lazy: only dense masks need torch
        tensor = torch.from_numpy(recipe.build(self.vocab, self._base(recipe.bases)))
        if device is not None and str(device) != "cpu":
            tensor = tensor.to(device)
        with self._lock:
            self._dense[dense_key] = tensor
            limit = max(1, self.max_bytes // max(1, self.vocab.size))
            while len(self._dense) > limit:
                self._dense.popitem(last=False)
        return tensor


def _joined(parts: list[np.ndarray]) -> np.ndarray:
    """int32: the id arrays end to end (repeats kept: setting a mask twice is harmless)."""
    return np.concatenate(parts).astype(np.int32, copy=False) if parts else \
        np.zeros(0, np.int32)
