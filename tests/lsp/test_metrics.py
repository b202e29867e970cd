"""Metric functions, the syntax check, and the aggregation over completion records."""
import pytest
from hypothesis import given
from hypothesis import strategies as st

from inkling.lsp import metrics as m
from inkling.lsp.replay_result import CompletionRecord, ReplayFailure, TraceResult, summarise
from inkling.lsp.syntax_check import SyntaxChecker


def test_exact_line():
    assert m.exact_line("return x  \nfoo", "return x\n    y = 2\n")
    assert m.exact_line("return x", "return x\r\nmore")
    assert not m.exact_line("return y", "return x\n")
    assert not m.exact_line("", "return x\n")
    assert m.exact_line("", "\n    x = 1")
    assert m.exact_line("   ", "")
    assert m.exact_line_any(["a", "b"], "b\n") and not m.exact_line_any([], "b")


def test_levenshtein_and_edit_similarity():
    assert m.levenshtein("kitten", "sitting") == 3
    assert m.levenshtein("", "abc") == 3
    assert m.edit_similarity("abcd\nzzz", "abcf\n") == pytest.approx(0.75)
    assert m.edit_similarity("", "") == 1.0
    assert m.edit_similarity("x", "") == 0.0
    assert m.edit_similarity("return x   ", "return x") == 1.0


@given(st.text(max_size=20), st.text(max_size=20))
def test_levenshtein_is_a_symmetric_distance(a, b):
    d = m.levenshtein(a, b)
    assert d == m.levenshtein(b, a)
    assert abs(len(a) - len(b)) <= d <= max(len(a), len(b))
    assert (d == 0) == (a == b)


def test_accepted_chars():
    assert m.accepted_chars("return x + 1", "return x - 1\n") == 9
    assert m.accepted_chars("", "abc") == 0
    assert m.accepted_chars("abc\ndef", "abc\ndeg") == 6


def test_percentiles_interpolate_like_numpy():
    values = [1.0, 2.0, 3.0, 4.0, 10.0]
    assert m.percentile(values, 50) == 3.0
    assert m.percentile(values, 95) == pytest.approx(8.8)
    assert m.percentile(values, 0) == 1.0 and m.percentile(values, 100) == 10.0
    assert m.percentile([5.0], 95) == 5.0
    assert m.distribution([4.0, 1.0, 2.0, 3.0]) == {"p50": 2.5, "p95": 3.85, "mean": 2.5}
    assert m.distribution([]) is None
    with pytest.raises(ValueError):
        m.percentile([], 50)


def test_fraction_ignores_unmeasured():
    assert m.fraction([True, False, None, True]) == pytest.approx(2 / 3)
    assert m.fraction([None]) is None


def test_syntax_check_compares_with_the_document_before():
    c = SyntaxChecker()
    text = "def f(x):\n    \n\ny = 2\n"
    assert c.valid("python", text, 14, "return x + 1")
    assert not c.valid("python", text, 14, "return x +")
    assert not c.valid("python", text, 14, "return (x")
    assert c.valid("python", text, 14, "")
    assert c.valid("cobol", text, 14, "anything") is None


@pytest.mark.parametrize("broken", ["x = = 1\n\ndef g():\n    \n",
                                    "def g():\n    \n    y = [1,\n",
                                    "x = (1,\n\ndef g():\n    \n"])
def test_syntax_check_ignores_errors_that_were_already_there(broken):
    c = SyntaxChecker()
    at = broken.index("    \n") + 4
    assert c.valid("python", broken, at, "return 2")
    if not broken.startswith("x = ("):     # an open bracket swallows what follows it
        assert not c.valid("python", broken, at, "return ]")
        assert not c.valid("python", broken, at, "return 2 +")


def test_syntax_check_counts_non_ascii_in_bytes():
    c = SyntaxChecker()
    text = "s = '😀é'\ndef f():\n    \n"
    at = text.index("    \n") + 4
    assert c.valid("python", text, at, "return 'ü'")
    assert not c.valid("python", text, at, "return 'ü")


def record(first: str, expected: str, **kw) -> CompletionRecord:
    fields = dict(line=1, path="a.py", expected=expected, drafts=(first,), latency_ms=10.0,
                  first_token_ms=2.0, model_ms=5.0, forwards=4, tokens=4, prefill_tokens=100,
                  reused_tokens=50, syntax_valid=True)
    fields.update(kw)
    return CompletionRecord(**fields)


def test_summary_of_known_records():
    t = TraceResult("t.jsonl", "t", completions=[
        record("return x", "return x\n", latency_ms=10.0),
        record("return y", "return x\n", latency_ms=30.0, syntax_valid=False, tokens=2),
        record("", "pass", latency_ms=20.0, drafts=(), syntax_valid=None)],
        edit_ms=[1.0, 3.0], checks=2, model_ms=12.0, total_ms=70.0)
    s = summarise([t])
    assert s["exact_line"] == pytest.approx(1 / 3, abs=1e-4)
    assert s["edit_similarity"] == pytest.approx((1 + 7 / 8 + 0) / 3, abs=1e-4)
    assert s["accepted_chars"] == {"sum": 8 + 7, "fraction": round(15 / 22, 4),
                                   "per_completion": 5.0}
    assert s["latency_ms"] == {"p50": 20.0, "p95": 29.0, "mean": 20.0}
    assert s["edit_latency_ms"]["mean"] == 2.0
    assert s["tokens_per_forward"] == pytest.approx(10 / 12, abs=1e-4)
    assert s["forwards"] == {"sum": 12, "per_completion": 4.0}
    assert s["prefill_tokens"] == {"sum": 300, "per_completion": 100.0}
    assert s["syntax_valid"] == 0.5
    assert s["undefined_names"] is None and s["identifier_match"] is None
    assert s["sync_ok"] and s["completions"] == 3 and s["checks"] == 2
    assert (s["model_ms"], s["total_ms"]) == (12.0, 70.0)


def test_failed_check_breaks_sync():
    t = TraceResult("t.jsonl", "t", checks=1,
                    failures=[ReplayFailure("t.jsonl", 7, "check failed", "check")])
    s = summarise([t, TraceResult("u.jsonl", "u")])
    assert not s["sync_ok"] and s["checks_failed"] == 1
    assert s["errors"] == ["t.jsonl:7: check failed"]
    assert s["exact_line"] is None and s["latency_ms"] is None
