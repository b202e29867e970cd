"""What a name can stand for during resolution: a module, a class, an instance, a function."""
from __future__ import annotations

from dataclasses import dataclass, field

from inkling.analysis.symbols import FileSymbols


@dataclass(frozen=True)
class ModuleRef:
    name: str


@dataclass(frozen=True)
class ClassRef:
    module: str
    path: tuple[str, ...]                      # qualified name: ("Outer", "Inner")
    symbols: FileSymbols | None = field(default=None, compare=False, hash=False)


@dataclass(frozen=True)
class InstanceRef:
    cls: ClassRef


@dataclass(frozen=True)
class FunctionRef:
    module: str
    owner: tuple[str, ...]                     # the class path for a method, () otherwise
    name: str
    bound: bool = False                        # its first parameter is already bound
    symbols: FileSymbols | None = field(default=None, compare=False, hash=False)


Entity = ModuleRef | ClassRef | InstanceRef | FunctionRef
