"""The tables of docs/benchmarks.md, regenerated from the store: per benchmark, its latest
run's date, commit, machine, load, wall time and figures, between the ``tables:begin`` and
``tables:end`` markers.

    python benchmarks/tables.py [--check]

``--check`` writes nothing and exits 1 where the file differs from what the store makes."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import store  # noqa: E402

DOC = store.REPO / "docs" / "benchmarks.md"
BEGIN, END = "<!-- tables:begin -->", "<!-- tables:end -->"


def cell(value) -> str:
    if isinstance(value, float):
        value = f"{value:.4g}"
    return str(value).replace("|", "\\|").replace("\n", " ")


def machine_text(m: dict | None) -> str:
    if not m:
        return ""
    parts = [m.get("cpu"), m.get("cores") and f"{m['cores']} cores",
             m.get("memory_gib") and f"{m['memory_gib']} GiB", m.get("gpu")]
    return ", ".join(str(p) for p in parts if p)


def load_text(load: dict | None) -> str:
    if not load or (load.get("start") is None and load.get("end") is None):
        return ""
    return f"{load.get('start', '?')} to {load.get('end', '?')}".replace("None", "?")


def summary_row(name: str, rec: dict, runs: int) -> str:
    """One benchmark's latest run: its store file and run, date, commit, weights, machine,
    load and wall time."""
    dirty = " (with changes)" if rec.get("dirty") else ""
    kind = ", quick" if rec.get("quick") else ", long" if rec.get("long") else \
        ", migrated" if rec.get("migrated") else ""
    kind += f", exit {rec['exit_code']}" if rec.get("exit_code") else ""
    wall = f"{rec['wall_s']} s" if rec.get("wall_s") is not None else ""
    return (f"| `{name}` | {rec['run']} of {runs}{kind} | {cell(rec.get('date') or '')} | "
            f"{cell(rec.get('commit') or '')}{dirty} | {cell(rec.get('weights') or '')} | "
            f"{cell(machine_text(rec.get('machine')))} | {cell(load_text(rec.get('load')))} | "
            f"{wall} | {len(rec.get('figures') or {})} |")


def figures_table(name: str, rec: dict) -> str:
    """The figures of one benchmark's latest run."""
    lines = [f"### {name}, run {rec['run']}", "", "| figure | value |", "|---|---|"]
    lines += [f"| {cell(k)} | {cell(v)} |" for k, v in sorted(rec["figures"].items())]
    return "\n".join(lines)


def render(store_dir: Path = store.STORE) -> str:
    """The generated part, markers included: a row per benchmark for its latest full run (its
    latest quick one where it has no other), then the figures of each such run that has any."""
    latest = {}
    for name in store.names(store_dir):
        runs = store.read_runs(name, store_dir)
        full = [r for r in runs if not r.get("quick")]     # a quick run's figures are a smoke test
        if runs:
            latest[name] = ((full or runs)[-1], len(runs))
    if not latest:
        return f"{BEGIN}\nThe store holds no runs yet.\n{END}"
    rows = ["| benchmark | run | date | commit | weights | machine | load | wall | figures |",
            "|---|---|---|---|---|---|---|---|---|"]
    rows += [summary_row(name, rec, n) for name, (rec, n) in latest.items()]
    parts = ["\n".join(rows)]
    parts += [figures_table(name, rec) for name, (rec, _) in latest.items() if rec.get("figures")]
    return f"{BEGIN}\n" + "\n\n".join(parts) + f"\n{END}"


def regenerated(text: str, store_dir: Path = store.STORE) -> str:
    """``text`` with its marked part replaced (the markers appended where it has none)."""
    generated = render(store_dir)
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        return head + generated + rest.split(END, 1)[1]
    return text.rstrip("\n") + "\n\n" + generated + "\n"


def write(doc: Path = DOC, store_dir: Path = store.STORE) -> bool:
    """Regenerate ``doc``; whether it changed."""
    old = doc.read_text(encoding="utf-8")
    new = regenerated(old, store_dir)
    if new != old:
        doc.write_text(new, encoding="utf-8")
    return new != old


def check(doc: Path = DOC, store_dir: Path = store.STORE) -> bool:
    """Whether ``doc`` is what the store makes."""
    old = doc.read_text(encoding="utf-8")
    return regenerated(old, store_dir) == old


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="exit 1 if the tables are stale")
    ap.add_argument("--doc", type=Path, default=DOC)
    ap.add_argument("--store", type=Path, default=store.STORE)
    args = ap.parse_args(argv)
    if args.check:
        if check(args.doc, args.store):
            return 0
        print(f"{args.doc} is stale: run python benchmarks/tables.py", file=sys.stderr)
        return 1
    print(f"{args.doc}: {'regenerated' if write(args.doc, args.store) else 'up to date'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
