"""Resolution over the symbol index: what a name or dotted chain stands for, which names may
follow it and which keywords a call to it takes; anything not known for certain is None.
A Resolver lives for one completion and memoises; cycles and depth are guarded.
"""
from __future__ import annotations

import builtins
import sys
from dataclasses import dataclass, field

from inkling.analysis.entities import ClassRef, Entity, FunctionRef, InstanceRef, ModuleRef
from inkling.analysis.module_paths import resolve_relative
from inkling.analysis.symbol_index import SymbolIndex
from inkling.analysis.symbols import ClassSymbol, FileSymbols, FunctionSymbol

MAX_DEPTH = 24
MODULE_DUNDERS = frozenset({"__name__", "__file__", "__doc__", "__package__", "__spec__",
                            "__loader__", "__path__", "__dict__", "__all__", "__builtins__",
                            "__cached__", "__annotations__"})
# bases that add no members of their own (typing helpers without parseable source)
_TRANSPARENT_BASES = {"object", "Generic", "typing.Generic", "Protocol", "typing.Protocol",
                      "ABC", "abc.ABC"}
_NAMEDTUPLE_MEMBERS = frozenset({"_asdict", "_replace", "_fields", "_make", "_field_defaults",
                                 "count", "index"})
_BUILTIN_NAMES = frozenset(dir(builtins))
_OBJECT_MEMBERS = frozenset(dir(object))
_TYPE_MEMBERS = frozenset(dir(type))


@dataclass
class Resolver:
    index: SymbolIndex
    _memo: dict = field(default_factory=dict, repr=False)
    _active: set = field(default_factory=set, repr=False)

    # ----------------------------------------------------------------- modules
    def module(self, name: str) -> FileSymbols | None:
        key = ("module", name)
        if key not in self._memo:
            self._memo[key] = self.index.module(name) if name else None
        return self._memo[key]

    def module_members(self, name: str) -> frozenset[str] | None:
        """Names ``name.`` may be followed by, or None when not known for certain."""
        return self._guarded(("members", name), lambda: self._module_members(name))

    def _module_members(self, name: str) -> frozenset[str] | None:
        sym = self.module(name)
        if sym is None or sym.dynamic or not sym.parsed:
            return None
        stars = self.star_exports(sym)
        if stars is None:
            return None
        return frozenset(set(sym.names) | MODULE_DUNDERS | self.index.submodules(name) | stars)

    def star_exports(self, sym) -> set[str] | None:
        """The names ``sym``'s star imports bring; None when one may bring any name."""
        names: set[str] = set()
        for star in sym.star_imports:
            target = absolute(sym, star.module, star.level)
            if unavailable(self.index, target):
                continue
            exported = self.exported(target)
            if exported is None:
                return None
            names |= exported
        return names

    def exported(self, name: str) -> frozenset[str] | None:
        """What ``from name import *`` binds."""
        sym = self.module(name)
        if sym is not None and sym.exported is not None:
            return frozenset(sym.exported)
        members = self.module_members(name)
        if members is None:
            return None
        return frozenset(n for n in members if not n.startswith("_"))

    # ------------------------------------------------------------------- names
    def lookup(self, sym: FileSymbols | None, name: str) -> Entity | None:
        """What ``name`` stands for in module ``sym``'s namespace (then builtins)."""
        if sym is None:
            return None
        key = ("lookup", sym.module, sym.path, name)
        if key not in self._memo:
            self._memo[key] = self._guarded(key, lambda: self._lookup(sym, name))
        return self._memo[key]

    def _lookup(self, sym: FileSymbols, name: str) -> Entity | None:
        if name in sym.classes:
            return ClassRef(sym.module, (name,), sym)
        if name in sym.functions:
            return FunctionRef(sym.module, (), name, False, sym)
        if name in sym.imports:
            for b in sym.alternatives.get(name, (sym.imports[name],)):
                found = self.binding(sym, b)
                if found is not None:
                    return found
            return None
        if sym.is_package and self.index.has_module(f"{sym.module}.{name}"):
            return ModuleRef(f"{sym.module}.{name}")
        if name in sym.names:
            return None                              # a variable: its type is not known
        for star in sym.star_imports:
            target = absolute(sym, star.module, star.level)
            exported = self.exported(target)
            if exported is not None and name in exported:
                return self.lookup(self.module(target), name)
        return builtin(name) if sym.parsed else None

    def binding(self, within: FileSymbols, b) -> Entity | None:
        """What an import binding refers to."""
        target = absolute(within, b.module, b.level)
        if not b.name:
            return ModuleRef(target) if self.index.has_module(target) else None
        if target and self.index.has_module(f"{target}.{b.name}"):
            return ModuleRef(f"{target}.{b.name}")
        return self.lookup(self.module(target), b.name)

    def attribute(self, entity: Entity | None, name: str) -> Entity | None:
        """What ``entity.name`` stands for, when it is a module, class or method."""
        if isinstance(entity, ModuleRef):
            sym = self.module(entity.name)
            if sym is None:
                return None
            found = self.lookup(sym, name)
            if found is None and self.index.has_module(f"{entity.name}.{name}"):
                return ModuleRef(f"{entity.name}.{name}")
            return found
        if isinstance(entity, (ClassRef, InstanceRef)):
            return self.class_attribute(entity, name)
        return None

    def class_attribute(self, entity: ClassRef | InstanceRef, name: str) -> Entity | None:
        """What ``entity.name`` stands for, ``entity`` a class or an instance of one."""
        cls = entity.cls if isinstance(entity, InstanceRef) else entity
        for owner in self.mro(cls) or ():
            c = self.class_symbol(owner)
            if c is None:
                return None
            if name in c.classes:
                return ClassRef(owner.module, owner.path + (name,), owner.symbols)
            if name in c.methods:
                f = c.methods[name]
                bound = "classmethod" in f.decorators or (
                    isinstance(entity, InstanceRef) and "staticmethod" not in f.decorators)
                return FunctionRef(owner.module, owner.path, name, bound, owner.symbols)
            if name in c.members:
                return None
        return None

    # ----------------------------------------------------------------- classes
    def class_symbol(self, ref: ClassRef) -> ClassSymbol | None:
        sym = ref.symbols if ref.symbols is not None else self.module(ref.module)
        if sym is None:
            return None
        found, table = None, sym.classes
        for part in ref.path:
            found = table.get(part)
            if found is None:
                return None
            table = found.classes
        return found

    def mro(self, ref: ClassRef) -> list[ClassRef] | None:
        """The class and its ancestors, depth first; None for an unknown base or a cycle."""
        return self._guarded(("mro", ref), lambda: self._mro(ref))

    def _mro(self, ref: ClassRef) -> list[ClassRef] | None:
        c = self.class_symbol(ref)
        if c is None:
            return None
        out = [ref]
        for base in c.bases:
            if base in _TRANSPARENT_BASES or base in ("NamedTuple", "typing.NamedTuple"):
                continue
            resolved = self.dotted(ref.symbols or self.module(ref.module), base)
            if not isinstance(resolved, ClassRef):
                return None
            if resolved.module == "builtins":
                out.append(resolved)
                continue
            ancestors = self.mro(resolved)
            if ancestors is None:
                return None
            out.extend(a for a in ancestors if a not in out)
        return out

    def class_members(self, ref: ClassRef) -> frozenset[str] | None:
        """Every member of the class and its bases; None when any of it is unknown."""
        key = ("class_members", ref)
        if key not in self._memo:
            self._memo[key] = self._class_members(ref)
        return self._memo[key]

    def _class_members(self, ref: ClassRef) -> frozenset[str] | None:
        if ref.module == "builtins":
            return builtin_members(ref.path[-1])
        chain = self.mro(ref)
        if chain is None:
            return None
        names = set(_OBJECT_MEMBERS)
        for owner in chain:
            if owner.module == "builtins":
                extra = builtin_members(owner.path[-1])
                if extra is None:
                    return None
                names |= extra
                continue
            c = self.class_symbol(owner)
            if c is None or c.dynamic:
                return None
            names |= c.members
            if any(b in ("NamedTuple", "typing.NamedTuple") for b in c.bases):
                names |= _NAMEDTUPLE_MEMBERS
        return frozenset(names)

    def members(self, entity: Entity | None) -> frozenset[str] | None:
        """Names that may follow ``entity.``; None when not known for certain."""
        if isinstance(entity, ModuleRef):
            return self.module_members(entity.name)
        if isinstance(entity, ClassRef):
            found = self.class_members(entity)
            return None if found is None else found | _TYPE_MEMBERS
        if isinstance(entity, InstanceRef):
            return self.class_members(entity.cls)
        return None

    # ----------------------------------------------------------------- chains
    def dotted(self, sym: FileSymbols | None, name: str) -> Entity | None:
        """``a.b.c`` in module ``sym``'s namespace."""
        if not name:
            return None
        parts = name.split(".")
        entity = self.lookup(sym, parts[0])
        for part in parts[1:]:
            entity = self.attribute(entity, part)
        return entity

    def _guarded(self, key, compute):
        """``compute()``, or None in a cycle or beyond ``MAX_DEPTH``."""
        if key in self._active or len(self._active) > MAX_DEPTH:
            return None
        self._active.add(key)
        try:
            return compute()
        finally:
            self._active.discard(key)


def absolute(within: FileSymbols, module: str, level: int) -> str:
    """The absolute name of ``module`` imported with ``level`` dots in ``within``."""
    return resolve_relative(within.module, within.is_package, module, level)


def unavailable(index: SymbolIndex, module: str) -> bool:
    """A standard-library module this platform lacks (``nt`` on Linux): a dead branch's import."""
    return module.split(".")[0] in sys.stdlib_module_names and not index.has_module(module)


# ------------------------------------------------------------------------ calls
def called_function(resolver: Resolver, entity: Entity | None
                    ) -> tuple[FunctionSymbol, bool] | None:
    """The function a call to ``entity`` runs (a class's ``__init__``) and whether it is bound."""
    if isinstance(entity, FunctionRef):
        if entity.module == "builtins":
            return None
        owner = entity.owner
        sym = entity.symbols if entity.symbols is not None else resolver.module(entity.module)
        if sym is None:
            return None
        if not owner:
            f = sym.functions.get(entity.name)
            return (f, entity.bound) if f is not None else None
        c = resolver.class_symbol(ClassRef(entity.module, owner, sym))
        f = c.methods.get(entity.name) if c is not None else None
        return (f, entity.bound) if f is not None else None
    if isinstance(entity, ClassRef) and entity.module != "builtins":
        init = resolver.class_attribute(InstanceRef(entity), "__init__")
        return called_function(resolver, init) if isinstance(init, FunctionRef) else None
    return None


def keyword_arguments(resolver: Resolver, entity: Entity | None
                      ) -> frozenset[str] | None:
    """Keyword argument names a call to ``entity`` accepts; None when any may be."""
    found = called_function(resolver, entity)
    if found is None:
        return None
    f, bound = found
    if any(d not in ("staticmethod", "classmethod") for d in f.decorators):
        return None                          # a decorator may change the signature
    return f.keyword_names(bound)


# --------------------------------------------------------------------- builtins
def builtin(name: str) -> Entity | None:
    if name not in _BUILTIN_NAMES:
        return None
    value = getattr(builtins, name)
    if isinstance(value, type):
        return ClassRef("builtins", (name,))
    if callable(value):
        return FunctionRef("builtins", (), name)
    return None


def builtin_members(name: str) -> frozenset[str] | None:
    value = getattr(builtins, name, None)
    return frozenset(dir(value)) if isinstance(value, type) else None
