"""benchmarks/peer_llamacpp.py's 'inkling serve' column, on the tiny model."""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from inkling.evaluation.retype_trace import retype_trace  # noqa: E402
from inkling.evaluation.trace_file import CompleteEvent  # noqa: E402

SOURCE = '''"""Intervals."""
from pkg.clamp import clamp


def width(low, high):
    return clamp(high - low, 0, 100)


def middle(low, high):
    half = width(low, high) / 2
    return low + half


def contains(low, high, x):
    return low <= x <= high
'''
HELPER = "def clamp(x, low, high):\n    return max(low, min(x, high))\n"


def test_the_peer_benchmark_times_inkling_serve_over_stdio(tmp_path, tiny_model_dir):
    """benchmarks/peer_llamacpp.py's 'inkling serve' column: a completion timed by the LSP
    client over stdio, as llama-server is timed by its HTTP client, the server Engine's own
    latency beside it; in process, the Engine's latency alone."""
    import peer_llamacpp as peer
    from inkling.completion.options import InklingOptions
    from inkling.evaluation.replay import LspReplayer
    from inkling.evaluation.replay_result import CompletionRecord
    from inkling.evaluation.syntax_check import SyntaxChecker
    from inkling.evaluation.trace_file import read_trace
    trace = read_trace(retype_trace("pkg/intervals.py", SOURCE, {"pkg/clamp.py": HELPER}).write(
        tmp_path / "intervals.jsonl"))
    options = InklingOptions().merged({"model": {"path": str(tiny_model_dir), "device": "cpu"},
                                       "completion": {"max_new_tokens": 4}})
    checker, samples = SyntaxChecker(), []
    served = LspReplayer(options, checker)
    try:
        session = peer._served_session(trace, served, checker)
        with peer.SyncProbe() as probe:
            for event in trace.events[:40]:
                if isinstance(event, CompleteEvent):
                    sample, ids = peer.inkling_sample(session, event, probe)
                    assert ids is None                   # another process: nothing probed
                    samples.append(sample)
                else:
                    session.apply(event)
    finally:
        served.close()
    assert samples
    for s in samples:
        assert 0 < s.engine_ms < s.latency_ms and s.model_decode_ms_per_token is None, s
    table = peer.summary(samples, [True] * len(samples))
    assert 0 < table["engine"] < table["p50"]
    here = peer.record_sample(CompletionRecord(1, "a.py", "x\n", ("ab",), 10.0, 2.0, 6.0, 3,
                                               4, 5, 0, True), sync_model_s=0.001)
    assert (here.latency_ms, here.engine_ms, here.model_decode_ms_per_token) == (10.0, None, 1.25)
    assert peer.summary([here], [True])["engine"] is None
