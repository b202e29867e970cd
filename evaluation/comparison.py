"""`inkling replay --compare KEY=V1,V2` and `--ablate KEY=V`: option combinations for one run.

Each combination is a set of options over the replay's own, replayed interleaved
(``replay_together``) so machine noise hits them alike. Keys are the options tree's dotted names,
values are typed as the option is, and a bad one is an error before anything runs."""
from __future__ import annotations

import dataclasses
import itertools
from dataclasses import dataclass

from inkling.completion.errors import OptionError
from inkling.completion.options import InklingOptions


@dataclass(frozen=True)
class Combination:
    settings: dict              # "section.key" -> value, in the order the keys were given
    options: InklingOptions


def label(settings: dict) -> str:
    """``section.key=value, ...`` of a combination's settings ("as given": none)."""
    return ", ".join(f"{k}={_text(v)}" for k, v in settings.items()) or "as given"


def _text(value) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def _snake(key: str) -> str:
    return "".join("_" + c.lower() if c.isupper() else c for c in key)


def _typed(key: str, current, text: str):
    """``text`` as a value of ``current``'s type (the option's)."""
    if isinstance(current, bool):
        if text.lower() in ("true", "on", "1"):
            return True
        if text.lower() in ("false", "off", "0"):
            return False
        raise OptionError(f"--compare {key}: {text!r} is not true or false")
    if isinstance(current, int):
        try:
            return int(text)
        except ValueError:
            raise OptionError(f"--compare {key}: {text!r} is not an integer") from None
    if isinstance(current, float):
        try:
            return float(text)
        except ValueError:
            raise OptionError(f"--compare {key}: {text!r} is not a number") from None
    return text


def _key(raw: str, base: InklingOptions) -> tuple[str, object]:
    """The canonical dotted name of an option and its current value."""
    parts = [_snake(p) for p in raw.split(".")]
    node = base
    for i, part in enumerate(parts):
        names = {f.name for f in dataclasses.fields(node)} if dataclasses.is_dataclass(node) \
            else set()
        if part not in names:
            where = ".".join(parts[:i]) or "the options"
            known = ", ".join(sorted(names)) if names else "none (it is a value)"
            raise OptionError(f"--compare: unknown option {raw!r} ({where} has {known})")
        node = getattr(node, part)
    if dataclasses.is_dataclass(node):
        raise OptionError(f"--compare: {raw!r} is a section; name one of its options")
    return ".".join(parts), node


def _nested(settings: dict) -> dict:
    out: dict = {}
    for dotted, value in settings.items():
        *sections, name = dotted.split(".")
        node = out
        for s in sections:
            node = node.setdefault(s, {})
        node[name] = value
    return out


def combinations(specs: list[str], base: InklingOptions) -> list[Combination]:
    """The combinations ``--compare`` specs ask for (one, the base, when there are none)."""
    axes: list[tuple[str, list]] = []
    for spec in specs:
        raw, sep, values = spec.partition("=")
        if not sep or not raw.strip() or not values.strip():
            raise OptionError(f"--compare {spec!r}: expected KEY=V1,V2 (e.g. "
                              "completion.draft=none,suffix)")
        key, current = _key(raw.strip(), base)
        if any(key == k for k, _ in axes):
            raise OptionError(f"--compare: {key} is compared twice")
        typed = [_typed(key, current, v.strip()) for v in values.split(",")]
        if len(set(map(repr, typed))) != len(typed):
            raise OptionError(f"--compare {key}: a value is repeated ({values})")
        for value in typed:                     # each value valid on its own: named early
            try:
                base.merged(_nested({key: value}))
            except OptionError as exc:
                raise OptionError(f"--compare {key}={_text(value)}: {exc}") from None
        axes.append((key, typed))
    out = []
    for values in itertools.product(*(vals for _, vals in axes)):
        settings = dict(zip((k for k, _ in axes), values))
        try:
            out.append(Combination(settings, base.merged(_nested(settings))))
        except OptionError as exc:
            raise OptionError(f"--compare: the combination {label(settings)} is invalid: "
                              f"{exc}") from None
    return out


def ablations(specs: list[str], base: InklingOptions) -> list[Combination]:
    """The options as given, then each ``KEY=V`` of ``specs`` alone; each run names every key."""
    changes: list[tuple[str, object, object]] = []
    for spec in specs:
        raw, sep, value = spec.partition("=")
        if not sep or not raw.strip() or not value.strip() or "," in value:
            raise OptionError(f"--ablate {spec!r}: expected KEY=VALUE, one value (e.g. "
                              "completion.monitor=off)")
        key, current = _key(raw.strip(), base)
        if any(key == k for k, _, _ in changes):
            raise OptionError(f"--ablate: {key} is changed twice")
        typed = _typed(key, current, value.strip())
        if typed == current:
            raise OptionError(f"--ablate {key}={_text(typed)}: that is already its value")
        try:
            base.merged(_nested({key: typed}))
        except OptionError as exc:
            raise OptionError(f"--ablate {key}={_text(typed)}: {exc}") from None
        changes.append((key, current, typed))
    given = {k: current for k, current, _ in changes}
    out = [Combination(dict(given), base)]
    for key, _, typed in changes:
        out.append(Combination({**given, key: typed}, base.merged(_nested({key: typed}))))
    return out


# the metrics ``--compare`` / ``--ablate`` print per combination
TABLE_ROWS = ("completions", "shown", "guard_cut", "guard_emptied", "exact_line",
              "edit_similarity", "syntax_valid", "undefined_names", "analysis_failures",
              "tokens_per_forward", "draft_throughput", "latency_ms")


def table(runs: list[dict]) -> str:
    """A plain-text table: ``TABLE_ROWS`` down, one column per run labelled by its settings."""
    labels = column_labels([r["settings"] for r in runs])
    rows = [[key] + [_figure(r, key) for r in runs] for key in TABLE_ROWS]
    widths = [max(len(row[i]) for row in rows + [[""] + labels]) for i in range(len(labels) + 1)]
    lines = [[""] + labels] + rows
    return "\n".join("  ".join(cell.ljust(w) if i == 0 else cell.rjust(w)
                               for i, (cell, w) in enumerate(zip(line, widths)))
                     for line in lines)


def column_labels(settings: list[dict]) -> list[str]:
    """Column heads: the first run's settings, then what each other run changes from them."""
    first = settings[0] if settings else {}

    def text(items) -> str:
        return ", ".join(f"{k.removeprefix('completion.')}={_text(v)}" for k, v in items)
    return [text(first.items()) or "as given"] + [
        text((k, v) for k, v in s.items() if first.get(k, object()) != v) or "as given"
        for s in settings[1:]]


def _figure(run: dict, key: str) -> str:
    """One run's ``key`` as a cell: a share with its count, a distribution's median, or parts."""
    value = run.get(key)
    if isinstance(value, dict):
        if "p50" in value:
            return f"p50 {value['p50']:.1f}"
        return ", ".join(f"{k} {_number(v)}" for k, v in value.items())
    n = run.get(key + "_n")
    return _number(value) + (f" (n {n})" if n is not None else "")


def _number(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):        # shares to 4 places, rates (tokens a second) to 1
        return f"{value:.1f}" if abs(value) >= 100 else f"{value:.4f}"
    return str(value)
