"""The short soak (evaluation/soak.py) against the real server and the bundled model: seeded
editors type, edit far from the cursor, complete, cancel, open and close documents and check
the server's copy of each, over stdio (one editor) and over TCP (two editors at once, each
replaced by a new one midway, one of them dropping its socket with requests in flight).
Every request must be answered exactly once and on its own connection, no document may
desync, stderr must hold no traceback and the server's memory must stay within its bound.
The long form runs the same driver for longer, as a maintained benchmark."""
import pytest

from inkling.evaluation.soak import RSS_FACTOR, RSS_MARGIN_MB, soak_stdio, soak_tcp, summary

pytestmark = pytest.mark.slow
SECONDS = 30            # per transport
SEED = 71


def _check(transport: str, fig: dict) -> None:
    print("\n" + summary(transport, fig))
    why = "\n".join(fig["problems"]) + "\n--- server stderr:\n" + fig["stderr_tail"]
    assert fig["started"] == fig["sessions"], why
    for name in ("unanswered", "answered_twice", "misrouted", "errors", "desyncs",
                 "tracebacks"):
        assert fig[name] == 0, f"{name} {fig[name]}\n{why}"
    assert fig["requests"] == fig["answered"] + fig["dropped"], why
    assert fig["checks"] > 0 and fig["keystrokes"] > 0 and fig["inline_ms"]["count"] > 0, why
    assert fig["rss_max_mb"] <= fig["rss_first_mb"] * RSS_FACTOR + RSS_MARGIN_MB, why


def test_a_short_soak_over_stdio(bundled_model_dir):
    fig = soak_stdio(str(bundled_model_dir), SECONDS, SEED)
    _check("stdio", fig)
    assert fig["exit_code"] == 0


def test_a_short_soak_over_tcp_with_two_clients_and_reconnects(bundled_model_dir):
    fig = soak_tcp(str(bundled_model_dir), SECONDS, SEED)
    _check("tcp", fig)
    assert fig["sessions"] == 4
    assert fig["exit_code"] == 0                   # SIGTERM ends the server cleanly
