"""What the defaults buy, on held-out code (issue 23): one ``inkling replay --compare``
run over retype traces of toolz 1.0.0 (a package the bundled model was not trained on),
or over the traces given (``--trace-files``, e.g. the reporting set's), drafting ``auto``
(the default: the mode chosen at load from measured forward costs) / ``none`` / ``suffix``
crossed with the monitor ``on`` / ``off``, the six combinations interleaved event by
event (``replay --compare``). The first combination is the defaults.

    python benchmarks/defaults.py [--json OUT] [--replay-json OUT] [--report OUT.html] [--runs N]
                                  [--traces DIR] [--quick] [--model PATH]
                                  [--trace-files benchmarks/traces/reporting/*.jsonl]

Prints what ``auto`` chose here and why, every metric per combination and six checks,
each with its figure: drafting where it pays (where auto drafts, tokens per forward of
the first draft; where it does not, ``suffix``'s tokens per forward under what a tree's
forward costs in one-row forwards); the monitor does not lower ``shown`` by more than
``SHOWN_MARGIN``; syntax errors in shown drafts fewer than with the monitor off (syntax_valid
reparses the whole document with the shown start of the line in it);
undefined_names over shown drafts at most half of monitor off's; exact_line against
``draft=none, monitor=off``; the monitor's own latency cost (``draft=none``, on against off,
p50) within ``MONITOR_COST``. ``--runs N`` makes N such runs one after
another and prints each one's table and checks, then each check's count of runs passed:
on this machine the latency p50s of two runs of the same code differ by up to a tenth,
a combination against another too. Under the checks, what the latency ratio is made of,
read off the same run: the monitor's own cost (``draft=none`` on against off) and, where
auto chose none, one configuration's two columns (``draft=auto`` and ``none``, monitor
off), this run's noise.
"""
from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import parser, quick_traces, toolz_builders, write_json  # noqa: E402

from inkling.evaluation.trace_file import write_trace  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
KEYS = ("completions", "shown", "guard_cut", "guard_emptied", "exact_line", "exact_line_any",
        "edit_similarity", "syntax_valid", "syntax_valid_n", "undefined_names",
        "undefined_names_n", "identifier_match", "tokens_per_forward", "tokens_per_forward_n")
SHOWN_MARGIN = 0.02     # the monitor may lower the share of shown drafts by 2 points at most
# the monitor's own latency cost at p50 (docs/decisions/monitor-default.md): the bundled
# model's, and any model's given by --model (the rule for 0.5 B parameters and above)
MONITOR_COST = {"bundled": 1.15, "given": 1.05}


def _write_traces(folder: Path) -> list[Path]:
    builders, why = toolz_builders(folder)
    if not builders:
        sys.exit(f"no held-out traces: {why}")
    return [b.write(folder / f"retype-{Path(path).stem}.jsonl") for path, b in builders]


def _write_quick(folder: Path) -> list[Path]:
    """The ``--quick`` trace, written into ``folder``."""
    return [write_trace(folder / "quick.jsonl", t.header, t.events) for t in quick_traces()]


def _run(traces: list[Path], out: Path, report: str | None, model: str) -> float:
    cmd = [sys.executable, "-m", "inkling.cli.main", "replay", *map(str, traces),
           *(["--model", model] if model else []),
           "--compare", "completion.draft=auto,none,suffix",
           "--compare", "completion.monitor=on,off",
           "--json", str(out)]
    if report:
        cmd += ["--report", report]
    print("$ inkling replay", " ".join(cmd[2:]).replace(str(traces[0].parent) + "/", ""),
          flush=True)
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True)
    return time.perf_counter() - t0


def _table(runs: list[dict]) -> None:
    names = [", ".join(f"{k.split('.')[-1]}={v}" for k, v in r["settings"].items()) for r in runs]
    width = max(len(n) for n in names) + 2
    print(f"{'':22}" + "".join(f"{n:>{width}}" for n in names))
    for key in KEYS:
        print(f"{key:22}" + "".join(f"{str(r[key]):>{width}}" for r in runs))
    print(f"{'draft tokens/forward':22}" + "".join(
        f"{str(r['draft_throughput']['tokens_per_forward']):>{width}}" for r in runs))
    print(f"{'analysis failures':22}" + "".join(
        f"{sum(r['analysis_failures'].values()):>{width}}" for r in runs))
    for key in ("latency_ms", "first_token_ms"):
        for q in ("p50", "p95"):
            print(f"{key + ' ' + q:22}" + "".join(f"{r[key][q]:>{width}.1f}" for r in runs))


def _drafting_check(chosen: dict, d: dict, suffix: dict) -> tuple[str, str, bool]:
    """Drafting where it pays: where auto drafts (``chosen``: the replay's
    config.runtime.drafting), the defaults' (``d``) tokens per forward of the first draft
    reach 2.5; where it does not, ``suffix``'s stay under what the forward of the tree
    auto measured (16 rows: the drafter's at the meter's prior) costs in one-row forwards
    (drafting would cost more than it yields)."""
    if chosen["mode"] == "suffix":
        tpf = d["tokens_per_forward"] or 0
        return ("drafting pays", f"auto drafts: tokens per forward of the first draft {tpf} "
                f"(n {d['tokens_per_forward_n']}) >= 2.5", tpf >= 2.5)
    ms = dict(zip(chosen["rows"], chosen["forward_ms"]))
    ratio, tpf = ms[16] / ms[1], suffix["tokens_per_forward"] or 0
    return ("drafting pays", f"auto does not draft: draft=suffix's tokens per forward {tpf} "
            f"< {ratio:.2f}, the one-row forwards a 16-row tree's forward costs "
            f"(draft=suffix p50 {suffix['latency_ms']['p50']:.1f} ms)", tpf < ratio)


def _checks(runs: list[dict], chosen: dict, bound: float = MONITOR_COST["bundled"]
            ) -> list[tuple[str, str, bool]]:
    """(name, text with the figures, passed) of each check; ``chosen``: what auto chose;
    ``bound``: the most the monitor's own cost may be, as a ratio of p50s."""
    by = {(r["settings"]["completion.draft"], r["settings"]["completion.monitor"]): r
          for r in runs}
    d, base, off = by["auto", "on"], by["none", "off"], by["auto", "off"]
    p50, base_p50 = d["latency_ms"]["p50"], base["latency_ms"]["p50"]
    on, off_p50 = by["none", "on"]["latency_ms"]["p50"], base_p50
    return [
        _drafting_check(chosen, d, by["suffix", "on"]),
        ("shown", f"shown {d['shown']} >= monitor off's {off['shown']} - {SHOWN_MARGIN} "
         f"(guard cut {d['guard_cut']}, emptied {d['guard_emptied']})",
         d["shown"] >= off["shown"] - SHOWN_MARGIN),
        ("syntax_valid", f"syntax errors in shown drafts {_errors(d)} (n {d['syntax_valid_n']}) "
         f"< monitor off's {_errors(off)} (n {off['syntax_valid_n']})",
         None not in (d["syntax_valid"], off["syntax_valid"])
         and (d["syntax_valid"] > off["syntax_valid"] or off["syntax_valid"] == 1.0)),
        ("undefined_names", f"undefined_names of shown drafts {d['undefined_names']} (n "
         f"{d['undefined_names_n']}) <= half of monitor off's {off['undefined_names']} "
         f"(n {off['undefined_names_n']})",
         None not in (d["undefined_names"], off["undefined_names"])
         and d["undefined_names"] <= off["undefined_names"] / 2),
        ("exact_line",
         f"exact_line {d['exact_line']} >= draft=none, monitor=off's {base['exact_line']}",
         d["exact_line"] >= base["exact_line"]),
        ("latency p50", f"the monitor's own cost: draft=none, monitor on {on:.1f} ms <= "
         f"x{bound} of off's {off_p50:.1f} ms (x{on / off_p50:.3f}); the defaults "
         f"{p50:.1f} ms (x{p50 / base_p50:.3f})", on <= bound * off_p50),
    ]


def _errors(run: dict) -> str:
    """The share of shown first drafts that are syntax errors (1 - syntax_valid)."""
    v = run["syntax_valid"]
    return "not measured" if v is None else f"{1 - v:.4f}"


def _one(traces: list[Path], out: Path, report: str | None, model: str
         ) -> tuple[list[tuple[str, str, bool]], list[dict]]:
    """One ``--compare`` run: its table and checks printed; the checks and the runs."""
    seconds = _run(traces, out, report, model)
    report = json.loads(out.read_text())
    runs, chosen = report["runs"], report["config"]["runtime"]["drafting"]
    print(f"\n{len(traces)} held-out retype traces ({_named(traces)}), {runs[0]['completions']} "
          f"completions a combination, {seconds / 60:.1f} min for the six")
    print(f"draft auto chose {chosen['mode']}: {chosen['reason']}; ms of a forward by rows: "
          + ", ".join(f"{r}: {ms}" for r, ms in zip(chosen["rows"], chosen["forward_ms"])) + "\n")
    _table(runs)
    print()
    checks = _checks(runs, chosen, MONITOR_COST["given" if model else "bundled"])
    for _, text, ok in checks:
        print(("pass  " if ok else "FAIL  ") + text)
    for line in _latency_parts(runs, chosen):
        print("      " + line)
    return checks, runs


def _figures(checks: list[tuple[str, str, bool]], runs: list[dict]) -> dict:
    """The headline figures: each check passed (1 / 0), each combination's p50 and exact_line."""
    named = {"_".join(f"{k.split('.')[-1]}={v}" for k, v in r["settings"].items()): r
             for r in runs}
    return {"checks": {name.replace(" ", "_"): ok for name, _, ok in checks},
            **{name: {"latency_ms_p50": r["latency_ms"]["p50"], "exact_line": r["exact_line"]}
               for name, r in named.items()}}


def _latency_parts(runs: list[dict], chosen: dict) -> list[str]:
    """What the latency check's ratio is made of, read off the same run: the monitor's own
    cost (``draft=none`` on against off), and the forwards its drafts take against
    monitor off's (the masks change what is decoded, and a longer draft costs its
    forwards whatever the analysis costs): a mean, which a few drafts run to the budget
    move (docs/decisions/monitor-default.md), not what the p50 reads; and, where auto chose none (so
    that ``draft=auto`` and ``none`` decode alike), the two columns of one
    configuration, monitor off: how far this run's p50s differ with nothing changed."""
    by = {(r["settings"]["completion.draft"], r["settings"]["completion.monitor"]): r
          for r in runs}
    p50 = {key: r["latency_ms"]["p50"] for key, r in by.items()}
    on, off = p50["none", "on"], p50["none", "off"]
    f_on, f_off = (by["none", m]["forwards"]["per_completion"] for m in ("on", "off"))
    parts = [f"the monitor's own cost: draft=none, monitor on {on:.1f} ms against off "
             f"{off:.1f} ms (x{on / off:.3f})",
             f"  its drafts' forwards, a completion's mean: {f_on:.2f} against off's "
             f"{f_off:.2f} (x{f_on / f_off:.3f})"]
    if chosen["mode"] == "none":
        same = p50["auto", "off"]
        parts.append(f"one configuration twice (auto chose none), monitor off: draft=auto "
                     f"{same:.1f} ms against draft=none {off:.1f} ms (x{same / off:.3f})")
    return parts


def _named(traces: list[Path]) -> str:
    return ", ".join(sorted({t.stem.removeprefix("retype-").split("-")[0] for t in traces}))


def main() -> int:
    ap = parser(__doc__)
    ap.add_argument("--replay-json", help="also keep the (last) replay's JSON here")
    ap.add_argument("--report", help="write the (last) replay's HTML report here")
    ap.add_argument("--traces", help="keep the retype traces in this folder")
    ap.add_argument("--runs", type=int, default=1, help="--compare runs one after another")
    ap.add_argument("--trace-files", nargs="+", type=Path,
                    help="replay these traces (e.g. benchmarks/traces/reporting/*.jsonl) "
                         "instead of toolz's retype traces")
    args = ap.parse_args()
    every = []
    with tempfile.TemporaryDirectory(prefix="inkling-defaults-") as tmp:
        folder = Path(args.traces) if args.traces else Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        traces = (_write_quick(folder) if args.quick else
                  args.trace_files or _write_traces(folder))
        out = Path(args.replay_json) if args.replay_json else Path(tmp) / "compare.json"
        for n in range(1 if args.quick else args.runs):
            if args.runs > 1:
                print(f"\n=== run {n + 1} of {args.runs}", flush=True)
            checks, runs = _one(traces, out, args.report, args.model)
            every.append(checks)
    write_json(args.json, _figures(every[-1], runs))
    if args.runs > 1:
        print(f"\nruns passed, of {args.runs}:")
        for i, (name, _, _) in enumerate(every[0]):
            print(f"  {sum(checks[i][2] for checks in every)}  {name}")
    # a --quick run's checks read three completions: they show the script works, no more
    return 0 if args.quick or all(ok for checks in every for _, _, ok in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
