"""The replay runs what the server runs: the preparation, the idle policy on the trace's
clock, accepted drafts; and through `inkling serve` (--via-lsp) it measures the same,
latencies aside."""
from __future__ import annotations

import json

import pytest

from inkling.completion.document import TextChange
from inkling.cli.main import main
from inkling.evaluation.replay_clock import ReplayClock
from inkling.evaluation.retype_trace import retype_trace
from inkling.evaluation.trace_file import ChangeEvent, CompleteEvent, OpenEvent

SOURCE = '''"""Shapes."""
import math


def area(radius):
    scaled = radius * radius
    return math.pi * scaled


def perimeter(radius):
    doubled = 2 * radius
    return math.pi * doubled


def describe(radius):
    a = area(radius)
    p = perimeter(radius)
    return f"{radius}: {a:.2f} {p:.2f}"
'''
HELPER = "def clamp(x, low, high):\n    return max(low, min(x, high))\n"
# what the machine's speed changes; everything else must match. The forward count is one of
# them: the acceptance meter verifies a draft only where it pays at the forward times it
# measures (completion/drafting/acceptance.py), so two runs of the same trace in one process
# differ there too (212 and 95 forwards here), while the drafts, lossless, do not
TIMING = {"latency_ms", "first_token_ms", "edit_latency_ms", "first_token_ms_typing",
          "model_ms", "total_ms", "forwards", "tokens_per_forward", "draft_throughput",
          "engine_latency_ms", "protocol_overhead_ms"}


def _change(text: str) -> ChangeEvent:
    return ChangeEvent("a.py", (TextChange(text),))


def test_the_clock_pauses_after_a_typed_line_only():
    clock = ReplayClock(keystroke_ms=100, line_pause_ms=2000)
    assert clock.quiet_before(OpenEvent("a.py", "")) == 0
    assert clock.quiet_before(_change("x = 1")) == 100          # typing on
    assert clock.quiet_before(_change("\n")) == 100             # the line ends
    assert clock.quiet_before(CompleteEvent("a.py", None, "y\n")) == 0   # debounce only
    assert clock.quiet_before(_change("y")) == 2100             # the pause after the line
    assert clock.quiet_before(_change("z")) == 100


def _replay(path, model_dir, capsys, *flags) -> dict:
    code = main(["replay", str(path), "--model", str(model_dir), "--device", "cpu",
                 "--max-new-tokens", "4", "--json", "-", *flags])
    out = capsys.readouterr()
    assert code == 0, out.err
    return json.loads(out.out)


def _without_timing(report: dict) -> dict:
    report = {k: v for k, v in report.items() if k not in TIMING and k != "config"}
    report["per_trace"] = {t: _without_timing(v) for t, v in report.get("per_trace", {}).items()}
    return report


@pytest.mark.slow
def test_default_replay_idles_accepts_and_matches_the_server(tmp_path, tiny_model_dir, capsys):
    trace = retype_trace("pkg/shapes.py", SOURCE, {"pkg/clamp.py": HELPER})
    path = trace.write(tmp_path / "shapes.jsonl")
    here = _replay(path, tiny_model_dir, capsys)
    assert here["sync_ok"], here["errors"]
    assert here["accepted"]["events"] > 0              # retype writes accept events
    assert here["idle"]["refresh_tokens"] > 0           # the typist paused after lines
    lsp = _replay(path, tiny_model_dir, capsys, "--via-lsp")
    assert _without_timing(lsp) == _without_timing(here)
    # through the protocol the headline latency is the client's round trip, the server's
    # Engine's own beside it; in process there is only the Engine's
    assert "engine_latency_ms" not in here and "protocol_overhead_ms" not in here
    client, engine, overhead = (lsp[k] for k in ("latency_ms", "engine_latency_ms",
                                                 "protocol_overhead_ms"))
    assert 0 < engine["p50"] < client["p50"] and overhead["p50"] > 0, (client, engine)
    assert abs(client["mean"] - engine["mean"] - overhead["mean"]) < 0.01
    one = next(iter(lsp["per_trace"].values()))
    assert one["engine_latency_ms"] == engine
