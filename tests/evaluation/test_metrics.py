"""Metric functions, the syntax check, and the aggregation over completion records."""
import pytest
from hypothesis import given
from hypothesis import strategies as st

from inkling.evaluation import metrics as m
from inkling.evaluation.replay_result import CompletionRecord, ReplayFailure, TraceResult, summarise
from inkling.evaluation.syntax_check import SyntaxChecker


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


# ------------------------------------------- metrics over what is shown (cannot flatter)
def test_shown_needs_a_character_that_is_not_whitespace():
    assert m.shown("x") and m.shown("  return 1\n")
    assert not m.shown("") and not m.shown("   \n\t")


def test_an_emptied_draft_is_not_shown_and_not_counted_valid():
    t = TraceResult("t.jsonl", "t", completions=[
        record("return x", "return x\n"),
        record("return (", "return (x)\n", syntax_valid=False, guard_cut=0),
        record("", "return y\n", drafts=("",), syntax_valid=None, guard_cut=9,
               guard_emptied=True),
        record("  ", "pass\n", syntax_valid=True, guard_cut=3, guard_emptied=True),
        record("ret", "return z\n", guard_cut=5)])
    s = summarise([t])
    assert s["shown"] == 0.6                         # 3 of 5 first drafts show something
    assert (s["guard_cut"], s["guard_emptied"]) == (0.6, 0.4)
    # over the 3 shown drafts only: the blank one's True is not counted
    assert (s["syntax_valid"], s["syntax_valid_n"]) == (round(2 / 3, 4), 3)
    assert s["undefined_names"] is None and s["undefined_names_n"] == 0
    assert s["analysis_failures"] == {"syntax_valid": 0, "undefined_names": 0}


def test_an_analysis_failure_is_counted_against_the_draft_not_dropped():
    t = TraceResult("t.jsonl", "t", completions=[
        record("x = a", "x = a\n", undefined=()),
        record("x = b", "x = a\n", undefined=None, failed=("undefined_names",)),
        record("x = c", "x = a\n", syntax_valid=None, undefined=(),
               failed=("syntax_valid",)),
        record("x = d", "x = a\n", undefined=("d",))])
    s = summarise([t])
    assert s["analysis_failures"] == {"syntax_valid": 1, "undefined_names": 1}
    assert (s["syntax_valid"], s["syntax_valid_n"]) == (0.75, 4)
    assert (s["undefined_names"], s["undefined_names_n"]) == (0.5, 4)
    assert m.fraction([None, True, False]) == 0.5 and m.measured([None, True, False]) == 2


def test_tokens_per_forward_is_the_first_drafts_not_the_sum_of_k():
    """A k=3 completion's 12 tokens in 5 batched forwards say nothing of speculation:
    tokens_per_forward reads the k=1 completions; every draft's tokens are throughput."""
    t = TraceResult("t.jsonl", "t", completions=[
        record("a", "a", tokens=4, forwards=4, latency_ms=12.0, first_token_ms=2.0),
        record("b", "b", tokens=6, forwards=3, latency_ms=22.0, first_token_ms=2.0),
        record("c", "c", asked=3, tokens=12, forwards=5, latency_ms=22.0, first_token_ms=2.0)])
    s = summarise([t])
    assert (s["tokens_per_forward"], s["tokens_per_forward_n"]) == (round(10 / 7, 4), 2)
    assert s["draft_throughput"] == {"tokens_per_forward": round(22 / 12, 4),
                                     "tokens_per_s": round(22 / 0.05, 1)}
    assert s["tokens_per_forward"] != s["draft_throughput"]["tokens_per_forward"]
    only_k3 = summarise([TraceResult("u.jsonl", "u", completions=t.completions[2:])])
    assert only_k3["tokens_per_forward"] is None and only_k3["tokens_per_forward_n"] == 0


def test_the_syntax_check_reads_the_whole_document_not_the_guards_statement():
    """The guard keeps ``int,`` (its statement, the elif's body, has no new error); the
    line it dedents ends the function, so the ``elif`` after it is an error: syntax_valid
    judges the whole file and counts the kept draft invalid."""
    from inkling.analysis.syntax_guard import SyntaxGuard
    doc = ("def f(o):\n    if a:\n        x = 1\n    elif b:\n |       y = 2\n"
           "    elif c:\n        y = 3\n    return x\n")
    text, at = doc.replace("|", ""), doc.index("|")
    assert SyntaxGuard(text, at, "python").longest_valid_prefix("int,") == len("int,")
    assert SyntaxChecker().valid("python", text, at, "int,") is False
    assert SyntaxChecker().valid("python", text, at, "int") is False     # no cut helps
    assert SyntaxChecker().valid("python", text, at + 7, "z = 0\n        ")   # at "y = 2"


def test_the_syntax_check_counts_what_python_rejects_anywhere_in_the_file():
    c = SyntaxChecker()
    text = "def g(a):\n    return f(a=1, )\n"
    at = text.index(", )") + 2
    assert c.valid("python", text, at, "b=2")
    assert not c.valid("python", text, at, "a=2")            # a keyword argument repeated
    assert not c.valid("python", text, at, "b")              # positional after keyword


@pytest.mark.parametrize("drafts, cut", [
    (["total += len(items"], (len("(items"), False)),      # shortened
    (['"""Sum the items.'], (0, False)),          # every prefix faulted: shown, not emptied
    (["total += 1"], (0, False)),                            # kept whole
    (["x = [1, 2", "total = 1"], (len(" = [1, 2"), False)),  # the first decoded draft's
])
def test_the_completion_carries_what_the_guard_cut(drafts, cut):
    """presentation.shown_drafts with the real syntax guard: what it cut from the first
    decoded draft is what the replay's guard_cut and guard_emptied count."""
    from inkling.analysis.syntax_guard import SyntaxGuard
    from inkling.completion.decoding.steps import Decoded
    from inkling.completion.presentation import shown_drafts
    from inkling.completion.prompt.builder import Prompt
    text = "def f(items):\n    total = 0\n    \n    return total\n"
    at = text.index("    \n") + 4
    prompt = Prompt([], text[:at], text[at:], [], [])
    outs = [Decoded(d, [1, 2], -1.0, 1, "stop-rule") for d in drafts]
    guard = SyntaxGuard(text, at, "python")
    shown, _, got = shown_drafts(outs, prompt, guard, "\n")
    assert (got.chars, got.emptied) == cut
    assert shown_drafts(outs, prompt, None, "\n")[2] == type(got)()    # no guard, no cut
