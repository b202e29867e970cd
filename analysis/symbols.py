"""What one Python file defines: the records the symbol index keeps per file."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class FunctionSymbol:
    name: str
    params: tuple[str, ...]          # every named parameter, in order
    positional_only: int = 0         # how many of ``params`` come before ``/``
    keyword_only: tuple[str, ...] = ()
    var_positional: str = ""         # the ``*args`` name, if any
    var_keyword: str = ""            # the ``**kwargs`` name, if any
    decorators: tuple[str, ...] = ()
    line: int = 0

    def keyword_names(self, bound_first: bool = False) -> frozenset[str] | None:
        """Names a call may pass as keywords; None when ``**kwargs`` accepts any.

        ``bound_first``: the first parameter is bound already (``self`` of a method)."""
        if self.var_keyword:
            return None
        skip = max(self.positional_only, 1 if bound_first else 0)
        return frozenset(self.params[skip:])


@dataclass(frozen=True)
class ClassSymbol:
    name: str
    bases: tuple[str, ...]           # base expressions as dotted names ('' when not a name)
    members: frozenset[str]          # methods, class attributes, self.x assignments, nested
    methods: dict[str, FunctionSymbol] = field(default_factory=dict, compare=False)
    classes: dict[str, "ClassSymbol"] = field(default_factory=dict, compare=False)
    decorators: tuple[str, ...] = ()
    dynamic: bool = False            # __getattr__, setattr, an unknown metaclass: any member
    line: int = 0
    end_line: int = 0


@dataclass(frozen=True)
class ImportBinding:
    """A name an import statement binds: ``import a.b as c`` binds c to module a.b;
    ``import a.b`` binds a to module a; ``from m import x as y`` binds y to m's x."""
    local: str
    module: str                      # absolute or relative to ``level``
    name: str = ""                   # the imported attribute ('' for ``import m``)
    level: int = 0                   # leading dots of a relative import


@dataclass(frozen=True)
class FileSymbols:
    module: str                      # dotted module name ('' when unknown)
    path: str = ""
    names: frozenset[str] = frozenset()          # module-level bound names
    functions: dict[str, FunctionSymbol] = field(default_factory=dict, compare=False)
    classes: dict[str, ClassSymbol] = field(default_factory=dict, compare=False)
    imports: dict[str, ImportBinding] = field(default_factory=dict, compare=False)
    star_imports: tuple[ImportBinding, ...] = ()
    all_names: frozenset[str] = frozenset()      # bound anywhere in the file, any scope
    exported: tuple[str, ...] | None = None      # __all__ when it is a literal list
    dynamic: bool = False            # module __getattr__ or globals() updates: any name
    is_package: bool = False         # an __init__.py
    parsed: bool = True              # False: too large or unreadable; nothing is known
    alternatives: dict[str, tuple[ImportBinding, ...]] = field(default_factory=dict,
                                                               compare=False)
    # every import binding of a name bound by several (``try: import a as x`` /
    # ``except: import b as x``; platform branches), first one first

    @staticmethod
    def unknown(module: str, path: str = "") -> "FileSymbols":
        """A file the index could not read: every lookup in it is unconstrained."""
        return FileSymbols(module, path, dynamic=True, parsed=False)
