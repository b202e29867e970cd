"""What a keystroke costs the Engine: ``apply_change`` (the document, its incremental parse,
and the analysis made with the edit: symbols, the names a free read may name, the monitor
and the guard at the cursor) in a workspace of many files, at the defaults.

    python benchmarks/edit_latency.py [--workspace DIR] [--file NAME] [--keys N] [--rounds 3]

The workspace defaults to a copy of the running Python's standard library's top-level
modules (about 170 files) and the file to ``inspect.py`` (124 KB); ``--keys`` characters
of a new statement are typed, one edit each, at the end of the line before a ``return`` in a
function past the file's middle (a new line, then code: the monitor and the guard are made
at a cursor in code), then taken back, ``--rounds`` times. Prints the edits' p50, mean and max (ms) and
the workspace's size. The model is loaded (``Engine.prepare`` walks the workspace for the
symbol index) and one completion runs before the keys, untimed: an edit makes the monitor
and the guard at its cursor only for a model a completion has run on (before run 5 of
``results/edit_latency.txt`` none ran, so the edits timed left them out).
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

from inkling.completion.document import Position, Range, TextChange
from inkling.completion.engine import Engine
from inkling.completion.options import InklingOptions

TYPED = "\n        total = first_value + len(arguments) * 2"


def stdlib_copy(dest: Path) -> Path:
    """The standard library's top-level modules, copied (the index walks a folder)."""
    dest.mkdir(parents=True, exist_ok=True)
    for f in Path(sysconfig.get_paths()["stdlib"]).glob("*.py"):
        shutil.copy2(f, dest / f.name)
    return dest


def type_keys(engine: Engine, uri: str, at: Position, keys: str, version: int) -> list[float]:
    """ms of each edit: ``keys`` typed at ``at`` one by one (a line break moves to the next
    line), then deleted one by one, last first."""
    times, spans = [], []                        # each key's (start, end) position
    line, col = at.line, at.character
    for ch in keys:
        start = Position(line, col)
        line, col = (line + 1, 0) if ch == "\n" else (line, col + 1)
        spans.append((start, Position(line, col)))
        t0 = time.perf_counter()
        engine.apply_change(uri, [TextChange(ch, Range(start, start))], version := version + 1)
        times.append((time.perf_counter() - t0) * 1000)
    for start, end in reversed(spans):
        t0 = time.perf_counter()
        engine.apply_change(uri, [TextChange("", Range(start, end))], version := version + 1)
        times.append((time.perf_counter() - t0) * 1000)
    return times


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workspace", type=Path, help="a folder of Python files (default: a "
                    "copy of the standard library's top-level modules)")
    ap.add_argument("--file", default="inspect.py", help="the file typed into (in the folder)")
    ap.add_argument("--keys", type=int, default=len(TYPED))
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        ws = a.workspace or stdlib_copy(Path(tmp) / "ws")
        path = ws / a.file
        if not path.is_file():
            print(f"{path}: no such file in the workspace", file=sys.stderr)
            return 2
        engine = Engine(InklingOptions())
        engine.workspace_folders = [ws.resolve().as_uri()]
        engine.prepare()
        while engine.workspace.waiting:                  # the index walked
            time.sleep(0.1)
        text = path.read_text(encoding="utf-8")
        lines = text.splitlines()
        line = next((i for i, s in enumerate(lines) if i > len(lines) // 2 and
                     s.startswith("        return") and lines[i - 1].strip()), len(lines)) - 1
        uri, at = path.resolve().as_uri(), Position(line, len(lines[line]))
        engine.open(uri, text, 1)
        engine.complete(uri, at)         # the model known: edits make the monitor and guard
        keys = (TYPED * (a.keys // len(TYPED) + 1))[:a.keys]
        times = []
        for r in range(a.rounds):
            times += type_keys(engine, uri, at, keys, 1 + r * 2 * len(keys))
            if engine.document(uri).text != text:
                raise SystemExit("the keys taken back did not leave the file as it was")
        engine.shutdown()
        files = len(list(ws.rglob("*.py")))
    print(f"workspace {files} Python files; {a.file} {len(text.encode()) // 1024} KB; "
          f"{len(times)} edits")
    print(f"edit ms: p50 {statistics.median(times):.2f}, mean {statistics.fmean(times):.2f}, "
          f"max {max(times):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
