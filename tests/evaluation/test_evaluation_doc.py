"""docs/evaluation.md keeps up with the code: every event kind the trace reader accepts has
a row in its events table, and every metric the replay reports is defined there."""
from __future__ import annotations

from pathlib import Path

from inkling.evaluation import trace_file
from inkling.evaluation.replay_result import replay_json

DOC = Path(__file__).resolve().parents[2] / "docs" / "evaluation.md"


def test_every_event_kind_has_a_row_in_the_events_table():
    text = DOC.read_text(encoding="utf-8")
    missing = [kind for kind in trace_file._PARSERS if f"\n| `{kind}` |" not in text]
    assert not missing, f"docs/evaluation.md has no row for the event kinds {missing}"


def test_every_reported_metric_is_defined():
    text = DOC.read_text(encoding="utf-8")
    keys = list(replay_json([], {}))
    assert "exact_line" in keys and "per_trace" in keys        # the report's own keys
    missing = [k for k in keys if f"`{k}`" not in text]
    assert not missing, f"docs/evaluation.md does not name the replay's keys {missing}"
