"""The two pinned evaluation sets, neither ever trained on (``packages.py`` enforces it).

The **tuning set** (the standard library's held-out files and toolz) is what every default was
chosen on; the **reporting set** (third-party packages no default was chosen on) gives the
headline quality, which tuning on it would flatter."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PinnedPackage:
    name: str
    version: str
    top_level: tuple[str, ...]      # the import names its wheel installs
    modules: tuple[str, ...]        # wheel paths of the files evaluated on (next line)
    retyped: tuple[str, ...] | None = None   # those retyped into traces (None: all ``modules``)
    evaluate_all: bool = False      # next-line match on every source file, not only ``modules``

    @property
    def pin(self) -> str:
        return f"{self.name}=={self.version}"

    @property
    def traced(self) -> tuple[str, ...]:
        return self.modules if self.retyped is None else self.retyped


@dataclass(frozen=True)
class EvalSet:
    name: str
    stdlib: bool                    # the standard library's held-out files are in it
    packages: tuple[PinnedPackage, ...]


TOOLZ = PinnedPackage("toolz", "1.0.0", ("toolz", "tlz"),
                      tuple(f"toolz/{m}.py" for m in ("dicttoolz", "functoolz", "itertoolz",
                                                      "recipes")),
                      evaluate_all=True)
TUNING = EvalSet("tuning", True, (TOOLZ,))
# retyped: modules whose functions are short enough that a trace stays small
REPORTING = EvalSet("reporting", False, (
    PinnedPackage("funcy", "2.0", ("funcy",), tuple(
        f"funcy/{m}.py" for m in ("calc", "colls", "debug", "decorators", "flow", "funcs",
                                  "seqs")),
        retyped=tuple(f"funcy/{m}.py" for m in ("colls", "flow", "funcs", "seqs"))),
    PinnedPackage("humanize", "4.11.0", ("humanize",), tuple(
        f"humanize/{m}.py" for m in ("filesize", "i18n", "number", "time")),
        retyped=("humanize/filesize.py",)),
    PinnedPackage("schedule", "1.2.2", ("schedule",), ("schedule/__init__.py",)),
    PinnedPackage("semver", "3.0.2", ("semver",), ("semver/version.py",)),
))
SETS = {s.name: s for s in (TUNING, REPORTING)}


def eval_set(name: str) -> EvalSet:
    if name not in SETS:
        raise ValueError(f"no evaluation set {name!r}: {' or '.join(SETS)}")
    return SETS[name]


def held_out_packages() -> tuple[PinnedPackage, ...]:
    """Every package of both sets: none may be trained on."""
    return tuple(p for s in SETS.values() for p in s.packages)
