"""The two pinned evaluation sets: what the defaults may be tuned on, and what the
headline figures are reported on.

- The **tuning set**: the standard library's held-out files (``models/corpus.py``: 2% of the
  files, by path hash) and toolz 1.0.0. Every default (beam width, block width, rereading,
  the alternative floor, drafting, the monitor) was chosen by benchmarks on these lines.
- The **reporting set**: a few third-party pure-Python packages pinned by version, none of
  them a training package nor copied into one, that no default was chosen on. The
  headline quality figures come from it; tuning a default on it would make them flatter.

Neither set is ever trained on: ``packages.py`` refuses both sets' packages
(``training_packages``, ``assert_not_held_out``) and drops any training file that copies
one of their files (``drop_held_out_copies``). Each package's files are read from its
pinned wheel (the wheel cache of ``packages.py``); ``scripts/make_sets.py`` builds both
sets' retype traces from the same wheels.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PinnedPackage:
    name: str
    version: str
    top_level: tuple[str, ...]      # the import names its wheel installs
    modules: tuple[str, ...]        # wheel paths of the files evaluated on (next line)
    retyped: tuple[str, ...] | None = None   # those retyped into traces, each one's workspace
                                             # the others (None: all of ``modules``)
    evaluate_all: bool = False      # next-line exact match on every source file of the
                                    # wheel, not only ``modules``

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
# retyped: modules whose functions are short enough that a trace stays small (a trace's
# every completion holds the rest of its function), about toolz's 376 completions in all
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
