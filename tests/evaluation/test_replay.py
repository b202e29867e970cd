"""`inkling replay`: drives the Engine through traces, verifies checks, reports metrics."""
import hashlib
import json

import pytest

from inkling.completion.decoding.plan import drafts_asked
from inkling.completion.engine import Completion, Draft, Engine
from inkling.completion.errors import OptionError
from inkling.completion.options import InklingOptions
from inkling.cli.main import main
from inkling.evaluation.replay import Replayer
from inkling.evaluation.replay_result import replay_json
from inkling.evaluation.report import render_report
from inkling.evaluation.syntax_check import SyntaxChecker
from inkling.evaluation.trace_file import parse_trace

HEADER = {"kind": "header", "version": 1, "name": "hand", "language": "python"}
METRIC_KEYS = ("exact_line", "exact_line_any", "edit_similarity", "accepted_chars", "latency_ms",
               "first_token_ms", "edit_latency_ms", "forwards", "tokens_per_forward",
               "tokens_per_forward_n", "draft_throughput", "shown", "guard_cut",
               "guard_emptied", "syntax_valid_n", "undefined_names_n", "analysis_failures",
               "prefill_tokens", "reused_tokens", "syntax_valid", "undefined_names",
               "identifier_match", "sync_ok", "model_ms", "total_ms", "completions", "traces",
               "config", "per_trace")


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def pos(line, character):
    return {"line": line, "character": character}


def change(path, start, end, text):
    return {"kind": "change", "path": path, "changes": [
        {"range": {"start": pos(*start), "end": pos(*end)}, "text": text}]}


def write(tmp_path, name, *events) -> str:
    path = tmp_path / name
    path.write_text("".join(json.dumps(e, ensure_ascii=False) + "\n" for e in (HEADER, *events)),
                    encoding="utf-8")
    return str(path)


@pytest.fixture(scope="module")
def options(tiny_model_dir):
    return InklingOptions().merged({
        "model": {"path": str(tiny_model_dir), "device": "cpu", "dtype": "float32"},
        "completion": {"max_new_tokens": 3, "max_block_tokens": 3}})


@pytest.fixture(scope="module")
def replayer(options, tiny_runtime):
    return Replayer(options, tiny_runtime, SyntaxChecker())


def replay_text(replayer, *events, source="t.jsonl"):
    text = "".join(json.dumps(e, ensure_ascii=False) + "\n" for e in (HEADER, *events))
    return replayer.replay(parse_trace(text, source))


# ------------------------------------------------------------- known answers
def test_hand_made_trace_with_known_answers(replayer, monkeypatch):
    """With the Engine's suggestions fixed, every metric has a known value."""
    seen = []
    answers = {(1, 4): "return a + b", (4, 4): "return a *"}

    def fake_complete(self, uri, position, k=None, trigger="automatic", cancelled=None):
        seen.append((uri.rsplit("/", 1)[1], self.document(uri).text, trigger))
        text = answers[(position.line, position.character)]
        return Completion(uri, position, [Draft("d1", text, -1.0, 3)], trigger,
                          first_token_ms=1.0, latency_ms=4.0, model_ms=3.0, forwards=3, tokens=3,
                          prefill_tokens=20, reused_tokens=5)
    monkeypatch.setattr(Engine, "complete", fake_complete)
    start = "def add(a, b):\n\n\ndef mul(a, b):\n"
    typed = "def add(a, b):\n    return a + b\n\ndef mul(a, b):\n    \n"
    result = replay_text(
        replayer,
        {"kind": "file", "path": "pkg/other.py", "text": "X = 1\n"},
        {"kind": "open", "path": "m.py", "text": start},
        change("m.py", (1, 0), (1, 0), "    "),
        {"kind": "complete", "path": "m.py", "position": pos(1, 4), "expected": "return a + b\n"},
        change("m.py", (1, 4), (1, 4), "return a + b"),
        change("m.py", (4, 0), (4, 0), "    \n"),
        {"kind": "complete", "path": "m.py", "position": pos(4, 4), "expected": "return a * b\n",
         "trigger": "invoked"},
        {"kind": "check", "path": "m.py", "sha256": sha(typed)},
        {"kind": "close", "path": "m.py"})
    assert seen == [("m.py", "def add(a, b):\n    \n\ndef mul(a, b):\n", "automatic"),
                    ("m.py", typed, "invoked")]
    s = replay_json([result], {})
    assert s["sync_ok"] and s["checks"] == 1 and s["edits"] == 3
    assert s["exact_line"] == 0.5 and s["exact_line_any"] == 0.5
    assert s["edit_similarity"] == pytest.approx((1 + (1 - 2 / 12)) / 2, abs=1e-4)
    assert s["accepted_chars"]["sum"] == 12 + 10
    assert s["accepted_chars"]["fraction"] == pytest.approx(22 / 26, abs=1e-4)
    assert s["syntax_valid"] == 0.5 and s["syntax_valid_n"] == 2 and s["shown"] == 1.0
    assert s["latency_ms"] == {"p50": 4.0, "p95": 4.0, "mean": 4.0}
    assert s["forwards"]["per_completion"] == 3 and s["tokens_per_forward"] == 1.0
    assert s["prefill_tokens"]["sum"] == 40 and s["reused_tokens"]["sum"] == 10
    assert list(s["per_trace"]) == ["t.jsonl"] and s["per_trace"]["t.jsonl"]["name"] == "hand"


def test_file_events_are_written_to_the_workspace(replayer, monkeypatch):
    roots = []

    def fake_complete(self, uri, position, k=None, trigger="automatic", cancelled=None):
        from pathlib import Path
        from urllib.parse import urlparse
        root = Path(urlparse(uri).path).parent
        roots.append(root)
        assert (root / "pkg" / "helpers.py").read_text() == "def h():\n    return '😀'\n"
        return Completion(uri, position, [], trigger)
    monkeypatch.setattr(Engine, "complete", fake_complete)
    result = replay_text(
        replayer, {"kind": "file", "path": "pkg/helpers.py", "text": "def h():\n    return '😀'\n"},
        {"kind": "open", "path": "main.py", "text": "x = 1\n"},
        {"kind": "complete", "path": "main.py", "position": pos(1, 0), "expected": "y = 2\n"})
    assert result.sync_ok and roots and not roots[0].exists()      # the workspace is temporary
    record = result.completions[0]        # nothing shown: nothing judged, nothing valid
    assert record.drafts == () and not record.shown and record.syntax_valid is None


def test_what_the_guard_cut_and_failed_analyses_are_counted(replayer, monkeypatch):
    """The replay judges only shown first drafts, carries the guard's cut from the
    Completion, and counts an analysis that raises against the draft."""
    from inkling.analysis.draft_names import DraftNames
    from inkling.completion.result import GuardCut
    answers = {0: ("", GuardCut(7, True)), 1: ("y = 2", GuardCut(3)),
               2: ("z = (", GuardCut()), 3: ("w = 4", GuardCut())}

    def fake_complete(self, uri, position, k=None, trigger="automatic", cancelled=None):
        text, cut = answers[position.line]
        return Completion(uri, position, [Draft("d", text, -1.0, 1)], trigger, guard=cut,
                          forwards=2, tokens=2)
    judged = []
    real_valid = SyntaxChecker.valid

    def valid(self, language, text, offset, insertion):
        judged.append(insertion)
        if insertion == "w = 4":
            raise RuntimeError("a parser that broke")
        return real_valid(self, language, text, offset, insertion)
    real_undefined = DraftNames.undefined

    def undefined(self, text, offset, draft, path=""):
        if draft == "z = (":
            raise RuntimeError("an analysis that broke")
        return real_undefined(self, text, offset, draft, path)
    monkeypatch.setattr(Engine, "complete", fake_complete)
    monkeypatch.setattr(SyntaxChecker, "valid", valid)
    monkeypatch.setattr(DraftNames, "undefined", undefined)
    result = replay_text(replayer, {"kind": "open", "path": "a.py", "text": "\n\n\n\n"},
                         *({"kind": "complete", "path": "a.py", "position": pos(line, 0),
                            "expected": "x = 1\n"} for line in range(4)))
    assert result.sync_ok, result.failures
    assert judged == ["y = 2", "z = (", "w = 4"]                  # the empty one is not
    assert [r.failed for r in result.completions] == [(), (), ("undefined_names",),
                                                      ("syntax_valid",)]
    s = replay_json([result], {})
    assert (s["shown"], s["guard_cut"], s["guard_emptied"]) == (0.75, 0.5, 0.25)
    assert (s["syntax_valid"], s["syntax_valid_n"]) == (round(1 / 3, 4), 3)   # y = 2 only
    assert (s["undefined_names"], s["undefined_names_n"]) == (round(1 / 3, 4), 3)
    assert s["analysis_failures"] == {"syntax_valid": 1, "undefined_names": 1}
    assert s["per_trace"]["t.jsonl"]["analysis_failures"] == s["analysis_failures"]


def test_a_replay_on_the_tiny_model_reports_what_is_shown(tmp_path, tiny_model_dir, capsys):
    """The real Engine with the monitor on: shown, the guard's cuts, the counts of the
    shown-draft metrics and both speculation figures, overall and per trace; the invoked
    completion (k = 3) is throughput, not the first draft's tokens per forward."""
    text = "import os\n\n\ndef f(a):\n    b = a + 1\n    \n    return b\n"
    trace = write(tmp_path, "t.jsonl", {"kind": "open", "path": "a.py", "text": text},
                  {"kind": "complete", "path": "a.py", "position": pos(5, 4),
                   "expected": "c = b\n"},
                  {"kind": "complete", "path": "a.py", "position": pos(5, 4),
                   "expected": "c = b\n", "trigger": "invoked"},
                  {"kind": "complete", "path": "a.py", "position": pos(4, 13), "expected": "\n"})
    code = main(["replay", trace, "--model", str(tiny_model_dir), "--device", "cpu",
                 "--max-new-tokens", "6", "--monitor", "on", "--json", "-"])
    out = capsys.readouterr()
    assert code == 0, out.err
    report = json.loads(out.out)
    for s in (report, report["per_trace"][trace]):
        assert s["completions"] == 3
        assert 0 <= s["guard_emptied"] <= s["guard_cut"] <= 1 and 0 <= s["shown"] <= 1
        shown = round(s["shown"] * 3)
        assert s["syntax_valid_n"] == shown and s["undefined_names_n"] == shown
        assert (s["syntax_valid"] is None) == (shown == 0)
        assert s["analysis_failures"] == {"syntax_valid": 0, "undefined_names": 0}
        assert s["tokens_per_forward_n"] == 2 and s["tokens_per_forward"] > 0
        assert s["draft_throughput"]["tokens_per_forward"] > 0
        assert s["draft_throughput"]["tokens_per_s"] > 0


def test_accept_takes_a_draft_only_when_its_first_line_was_typed(replayer, monkeypatch):
    """An accept event takes draft i of the latest completion in its document when that
    draft's first line is the expected first line; otherwise nothing is taken."""
    answers = {(0, 0): ["y = 2  ", "z = 3"], (1, 0): ["w = 1", "y = 9"], (2, 0): [""]}
    taken = []

    def fake_complete(self, uri, position, k=None, trigger="automatic", cancelled=None):
        texts = answers[(position.line, position.character)]
        return Completion(uri, position, [Draft(f"d{position.line}.{i}", t, -1.0, 1)
                                          for i, t in enumerate(texts)], trigger)
    monkeypatch.setattr(Engine, "complete", fake_complete)
    monkeypatch.setattr(Engine, "accept", lambda self, draft_id: taken.append(draft_id))

    def complete(line, expected):
        return {"kind": "complete", "path": "a.py", "position": pos(line, 0),
                "expected": expected}
    accept = {"kind": "accept", "path": "a.py"}
    result = replay_text(
        replayer, {"kind": "open", "path": "a.py", "text": "\n\n\n"},
        {"kind": "open", "path": "b.py", "text": ""},
        complete(0, "y = 2\nmore\n"), accept,     # taken: trailing whitespace ignored
        accept,                                      # already taken: nothing more
        complete(1, "y = 9\n"), accept,            # draft 0 is not what was typed
        {**accept, "draft": 1},                      # (the latest completion was answered)
        complete(1, "y = 9\n"), {**accept, "draft": 1},   # draft 1 is
        complete(1, "y = 9\n"), {**accept, "draft": 7},   # the model gave fewer drafts
        complete(2, ""), accept)                     # an empty draft is never taken
    assert result.sync_ok, result.failures
    assert taken == ["d0.0", "d1.1"]
    assert (result.accepts, result.accepted) == (7, 2)
    s = replay_json([result], {})
    assert s["accepted"] == {"sum": 2, "events": 7, "fraction": round(2 / 7, 4)}
    assert s["per_trace"]["t.jsonl"]["accepted"]["sum"] == 2
    assert replay_json([], {})["accepted"] == {"sum": 0, "events": 0, "fraction": None}

    early = replay_text(replayer, {"kind": "open", "path": "a.py", "text": "\n"},
                        complete(0, "y = 2\n"), {"kind": "close", "path": "a.py"},
                        {"kind": "open", "path": "a.py", "text": "\n"}, accept,
                        source="early.jsonl")
    assert [str(f) for f in early.failures] == [
        "early.jsonl:6: accept event: accept in a.py before any completion there (since it "
        "was opened)"]
    assert early.stopped and taken == ["d0.0", "d1.1"]


# ------------------------------------------------------------- real engine
def first_draft(replayer, text, position):
    result = replay_text(replayer, {"kind": "open", "path": "a.py", "text": text},
                         {"kind": "complete", "path": "a.py", "position": position,
                          "expected": "x"})
    return result.completions[0].first


def test_an_accepted_draft_feeds_the_history_source(replayer, tiny_runtime, monkeypatch):
    """After an accept, the engine's history (the accepted-history drafting source) holds
    the accepted draft's tokens; a draft that was not typed leaves it empty."""
    engines = []
    accept = Engine.accept

    def spy(self, draft_id):
        engines.append(self)
        return accept(self, draft_id)
    monkeypatch.setattr(Engine, "accept", spy)
    text = "x = 1\ny = "
    draft = first_draft(replayer, text, pos(1, 4))
    assert draft.strip(), "the tiny model gave an empty first draft here"

    def trace(expected):
        return replay_text(replayer, {"kind": "open", "path": "a.py", "text": text},
                           {"kind": "complete", "path": "a.py", "position": pos(1, 4),
                            "expected": expected}, {"kind": "accept", "path": "a.py"})
    missed = trace("\u00a7" + draft)
    assert missed.sync_ok and (missed.accepts, missed.accepted) == (1, 0) and not engines
    result = trace(draft + "\n")
    assert result.sync_ok and (result.accepts, result.accepted) == (1, 1), result.failures
    engine, = engines
    assert [list(seq) for seq in engine.sources.history.sequences()] == [
        list(tiny_runtime.encode(draft.replace("\r\n", "\n")))]
    assert engine.stats.accepted == 1 and engine.stats.accepted_chars == len(draft)


# ------------------------------------------------------------- real engine
def test_utf16_positions_outside_the_bmp(replayer):
    text = "s = '😀'\nt = 1\n"
    after = "s = '😀🐍'\nt = 12\n"
    result = replay_text(
        replayer, {"kind": "open", "path": "u.py", "text": text},
        change("u.py", (0, 7), (0, 7), "🐍"),          # after the emoji's two UTF-16 units
        change("u.py", (1, 5), (1, 5), "2"),
        {"kind": "complete", "path": "u.py", "position": pos(0, 9), "expected": "'\n"},
        {"kind": "check", "path": "u.py", "sha256": sha(after)})
    assert result.sync_ok and result.checks == 1, result.failures
    assert len(result.completions) == 1 and result.completions[0].forwards >= 1
    bad = replay_text(replayer, {"kind": "open", "path": "u.py", "text": text},
                      change("u.py", (0, 6), (0, 6), "x"))    # splits the surrogate pair
    assert not bad.sync_ok and "surrogate pair" in str(bad.failures[0])


def test_bad_input_names_trace_and_line(replayer):
    outside = replay_text(replayer, {"kind": "open", "path": "a.py", "text": "x = 1\n"},
                          change("a.py", (5, 0), (5, 0), "y"), source="outside.jsonl")
    assert [str(f) for f in outside.failures] == [
        "outside.jsonl:3: change event: a.py: line 5 is out of range (the document has 2 "
        "lines, counted from 0)"]
    closed = replay_text(replayer, {"kind": "open", "path": "a.py", "text": "x = 1\n"},
                         {"kind": "close", "path": "a.py"},
                         {"kind": "complete", "path": "a.py", "position": pos(0, 0),
                          "expected": "x"}, source="closed.jsonl")
    assert str(closed.failures[0]).startswith("closed.jsonl:4: complete event: unknown document")
    assert "/tmp" not in str(closed.failures[0]) and closed.stopped
    twice = replay_text(replayer, {"kind": "open", "path": "a.py", "text": ""},
                        {"kind": "open", "path": "a.py", "text": ""}, source="twice.jsonl")
    assert "twice.jsonl:3" in str(twice.failures[0]) and "already open" in str(twice.failures[0])


def test_failed_check_exits_non_zero_naming_trace_and_line(tmp_path, tiny_model_dir, capsys):
    good = write(tmp_path, "good.jsonl", {"kind": "open", "path": "a.py", "text": "x = 1\n"},
                 {"kind": "check", "path": "a.py", "sha256": sha("x = 1\n")})
    bad = write(tmp_path, "bad.jsonl", {"kind": "open", "path": "a.py", "text": "x = 1\n"},
                {"kind": "check", "path": "a.py", "sha256": sha("x = 2\n")},
                change("a.py", (0, 4), (0, 5), "2"),
                {"kind": "check", "path": "a.py", "sha256": sha("x = 2\n")})
    truncated = tmp_path / "truncated.jsonl"
    truncated.write_text(json.dumps(HEADER) + '\n{"kind": "open", "path": "a.py", "te')
    out = tmp_path / "out.json"
    code = main(["replay", good, bad, str(truncated), "--model", str(tiny_model_dir),
                 "--device", "cpu", "--json", str(out)])
    err = capsys.readouterr().err
    assert code != 0
    assert f"{bad}:3: check failed for a.py" in err
    assert f"{truncated}:2: malformed JSON" in err
    report = json.loads(out.read_text())
    assert report["sync_ok"] is False and report["checks"] == 3 and report["checks_failed"] == 1
    assert list(report["per_trace"]) == [good, bad, str(truncated)]
    assert report["per_trace"][good]["sync_ok"] is True
    assert report["per_trace"][bad]["checks"] == 2        # replay went on after the failure


def test_json_to_stdout_has_every_key(tmp_path, tiny_model_dir, capsys):
    trace = write(tmp_path, "t.jsonl", {"kind": "open", "path": "a.py", "text": "x = foo()\n"},
                  {"kind": "complete", "path": "a.py", "position": pos(0, 8), "expected": ")\n"},
                  {"kind": "check", "path": "a.py", "sha256": sha("x = foo()\n")})
    html = tmp_path / "r.html"
    code = main(["replay", trace, "--model", str(tiny_model_dir), "--device", "cpu",
                 "--max-new-tokens", "2", "--json", "-", "--report", str(html)])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    report = json.loads(captured.out)
    for key in METRIC_KEYS:
        assert key in report, key
    assert report["sync_ok"] is True
    assert report["undefined_names"] in ((0.0, 1.0) if report["shown"] else (None,))
    assert report["config"]["completion"]["max_new_tokens"] == 2
    assert report["config"]["cache"]["mode"] == "pie"
    assert report["completions"] == 1 and report["traces"] == 1
    page = html.read_text()
    assert page.count("data:image/png;base64,") == 3 and "not measured" in page


@pytest.mark.parametrize("mode", ["full", "pie", "naive"])
def test_cache_modes_replay_in_sync_and_report_staleness(tmp_path, tiny_model_dir, capsys, mode):
    text = "import os\n\n\ndef f(a):\n    return a\n"
    edited = "import os\n\n\n# note\ndef f(a):\n    return a\n"
    trace = write(tmp_path, "t.jsonl", {"kind": "open", "path": "a.py", "text": text},
                  {"kind": "complete", "path": "a.py", "position": pos(4, 11), "expected": "\n"},
                  change("a.py", (3, 0), (3, 0), "# note\n"),
                  {"kind": "complete", "path": "a.py", "position": pos(5, 11), "expected": "\n"},
                  {"kind": "check", "path": "a.py", "sha256": sha(edited)})
    code = main(["replay", trace, "--model", str(tiny_model_dir), "--device", "cpu",
                 "--max-new-tokens", "2", "--cache", mode, "--json", "-"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0 and report["sync_ok"] and report["config"]["cache"]["mode"] == mode
    assert "refreshes" in report and report["stale_tokens"]["mean"] is not None
    if mode == "full":
        assert report["stale_tokens"]["max"] == 0
    else:   # the edit above the cursor shifted what follows it: reused, and stale
        assert report["stale_tokens"]["max"] > 0 and report["reused_tokens"]["sum"] > 0


def test_an_unknown_switch_value_fails_clearly(tmp_path, capsys):
    trace = write(tmp_path, "t.jsonl", {"kind": "open", "path": "a.py", "text": ""})
    with pytest.raises(SystemExit) as exc:
        main(["replay", trace, "--cache", "fast"])
    assert exc.value.code == 2 and "invalid choice: 'fast'" in capsys.readouterr().err


def test_drafts_flag_sets_both_draft_counts(tmp_path):
    from inkling.cli.main import _parser
    from inkling.cli.replay import replay_options
    args = _parser().parse_args(["replay", "t.jsonl", "--drafts", "3", "--max-new-tokens", "9"])
    c = replay_options(args).completion
    assert (c.drafts, c.automatic_drafts, c.max_new_tokens) == (3, 3, 9)


def test_suffix_drafting_with_a_datastore_folder(tmp_path, tiny_model_dir, capsys):
    store = tmp_path / "store"
    store.mkdir()
    (store / "lib.py").write_text("def f(a):\n    return a\n")
    text = "import os\n\n\ndef f(a):\n    return a\n"
    trace = write(tmp_path, "t.jsonl", {"kind": "open", "path": "a.py", "text": text},
                  {"kind": "complete", "path": "a.py", "position": pos(4, 11), "expected": "\n"},
                  {"kind": "check", "path": "a.py", "sha256": sha(text)})
    code = main(["replay", trace, "--model", str(tiny_model_dir), "--device", "cpu",
                 "--max-new-tokens", "4", "--draft", "suffix", "--datastore", str(store),
                 "--json", "-"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0 and report["sync_ok"]
    assert report["config"]["completion"]["datastore"] == str(store)
    assert main(["replay", trace, "--model", str(tiny_model_dir), "--draft", "suffix",
                 "--datastore", str(tmp_path / "gone")]) == 2     # a folder that is not there
    err = capsys.readouterr().err
    assert "completion.datastore" in err and "gone" in err


def test_engine_refusals_surface_as_one_line(tmp_path, tiny_model_dir, capsys, monkeypatch):
    """What the Engine refuses (an option it cannot honour) stops the replay with its
    message, on one line."""
    def refuse(self, uri, position, k=None, trigger="automatic", cancelled=None):
        raise OptionError(f"the number of drafts must be between 1 and 16, got "
                          f"{drafts_asked(self.options.completion, trigger) * 10}")
    monkeypatch.setattr(Engine, "complete", refuse)
    trace = write(tmp_path, "t.jsonl", {"kind": "open", "path": "a.py", "text": "x = 1\n"},
                  {"kind": "complete", "path": "a.py", "position": pos(0, 0), "expected": "x"})
    assert main(["replay", trace, "--model", str(tiny_model_dir), "--device", "cpu",
                 "--drafts", "3"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == "inkling: error: the number of drafts must be between 1 and 16, got 30"
    assert all(line.startswith("inkling: model ") for line in err[:-1]), err   # the load line


def test_report_marks_unmeasured_metrics(replayer):
    result = replay_text(replayer, {"kind": "open", "path": "a.py", "text": "x = (1\n"},
                         {"kind": "complete", "path": "a.py", "position": pos(0, 6),
                          "expected": ")\n"})
    page = render_report([result], replay_json([result], {"k": "<v>"}))
    assert page.startswith("<!DOCTYPE html>") and "not measured" in page
    assert "&lt;v&gt;" in page and "<img" in page


def test_report_without_matplotlib_says_how_to_get_its_plots(replayer, monkeypatch):
    import importlib.util
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "matplotlib" else find_spec(name, *a))
    result = replay_text(replayer, {"kind": "open", "path": "a.py", "text": "x = 1\n"},
                         {"kind": "complete", "path": "a.py", "position": pos(0, 0),
                          "expected": "x"})
    page = render_report([result], replay_json([result], {}))
    assert "<img" not in page and "pip install &#x27;inkling[report]&#x27;" in page
    assert "<h2>Metrics" in page


def test_sample_traces_replay_in_sync(replayer, shared_dir):
    from inkling.evaluation.trace_file import read_trace
    paths = sorted((shared_dir / "traces").glob("*.jsonl"))
    assert paths
    results = [replayer.replay(read_trace(p)) for p in paths]
    report = replay_json(results, {})
    assert report["sync_ok"], report["errors"]
    assert report["completions"] == sum(
        sum(1 for line in p.read_text().splitlines() if '"kind": "complete"' in line)
        for p in paths)
    assert report["checks"] > 0 and report["latency_ms"]["p50"] > 0


def _edit_then_complete(tmp_path) -> str:
    """A trace's path: a line inserted, a completion after it, the document checked."""
    text = "def f(a):\n    return a\n"
    edited = "def f(a):\n    b = a\n    return a\n"
    return write(tmp_path, "t.jsonl", {"kind": "open", "path": "a.py", "text": text},
                 change("a.py", (1, 0), (1, 0), "    b = a\n"),
                 {"kind": "complete", "path": "a.py", "position": pos(2, 11), "expected": "\n"},
                 {"kind": "check", "path": "a.py", "sha256": sha(edited)})


@pytest.mark.slow
def test_replay_via_lsp_keeps_documents_in_sync(tmp_path, tiny_model_dir, capsys):
    trace = _edit_then_complete(tmp_path)
    code = main(["replay", trace, "--via-lsp", "--model", str(tiny_model_dir),
                 "--max-new-tokens", "2", "--json", "-"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0 and report["sync_ok"] and report["config"]["via_lsp"]
    assert report["completions"] == 1 and report["checks"] == 1
    assert report["latency_ms"]["p50"] >= report["first_token_ms"]["p50"]


@pytest.mark.slow
def test_a_comparison_via_lsp_steps_each_server_event_by_event(tmp_path, tiny_model_dir,
                                                                 capsys):
    """--via-lsp --compare: one server a combination, the trace's events applied in each
    in turn; every server's documents stay in sync and each combination's drafts measure
    as a replay of it alone does."""
    common = [_edit_then_complete(tmp_path), "--model", str(tiny_model_dir), "--max-new-tokens", "3", "--json", "-"]
    code = main(["replay", *common, "--via-lsp", "--compare", "completion.monitor=on,off"])
    runs = json.loads(capsys.readouterr().out)["runs"]
    assert code == 0 and [r["sync_ok"] for r in runs] == [True, True]
    for run, monitor in zip(runs, ("on", "off")):
        assert main(["replay", *common, "--via-lsp", "--monitor", monitor]) == 0
        alone = json.loads(capsys.readouterr().out)
        keys = ("shown", "guard_cut", "edit_similarity", "syntax_valid", "undefined_names")
        assert {k: run[k] for k in keys} == {k: alone[k] for k in keys}


@pytest.mark.slow
def test_accepts_via_lsp_equal_in_process(replayer, tmp_path, tiny_model_dir, capsys):
    """--via-lsp takes the same drafts through the server's accept command (the id its inline
    item carries) as the in-process Engine: the same accepted count and quality metrics."""
    text = "x = 1\ny = "
    draft = first_draft(replayer, text, pos(1, 4))
    assert draft.strip(), "the tiny model gave an empty first draft here"
    typed = text + draft + "\n"
    trace = write(tmp_path, "t.jsonl", {"kind": "open", "path": "a.py", "text": text},
                  {"kind": "complete", "path": "a.py", "position": pos(1, 4),
                   "expected": draft + "\n"}, {"kind": "accept", "path": "a.py"},
                  change("a.py", (1, 4), (1, 4), draft + "\n"),
                  {"kind": "complete", "path": "a.py", "position": pos(2, 0), "expected": "z\n"},
                  {"kind": "accept", "path": "a.py"},
                  {"kind": "check", "path": "a.py", "sha256": sha(typed)})
    reports = []
    for via in ([], ["--via-lsp"]):
        code = main(["replay", trace, *via, "--model", str(tiny_model_dir), "--device", "cpu",
                     "--max-new-tokens", "3", "--json", "-"])
        out = capsys.readouterr()
        assert code == 0, out.err
        reports.append(json.loads(out.out))
    here, lsp = reports
    assert here["accepted"]["sum"] >= 1 and here["accepted"]["events"] == 2
    for key in ("accepted", "exact_line", "exact_line_any", "accepted_chars", "sync_ok",
                "shown", "guard_cut", "guard_emptied", "syntax_valid", "tokens_per_forward_n"):
        assert lsp[key] == here[key], key
    assert lsp["per_trace"][trace]["accepted"] == here["per_trace"][trace]["accepted"]


@pytest.mark.slow
def test_via_lsp_each_trace_has_its_own_workspace(options):
    """One server replays every trace of --via-lsp, but its workspace is the trace's own
    folder, as the in-process replay's Engine is new for each trace: the files of one trace
    are not indexed for the next (their names once reached another trace's drafts through
    the monitor: 6 of 149 semver completions after funcy's traces)."""
    from inkling.evaluation.replay import LspReplayer
    lsp_replayer = LspReplayer(options, SyntaxChecker())
    try:
        first = "".join(json.dumps(e) + "\n" for e in (
            HEADER, {"kind": "file", "path": "pkg/helpers.py", "text": "def leaked():\n    pass\n"},
            {"kind": "open", "path": "main.py", "text": "x = 1\n"},
            {"kind": "complete", "path": "main.py", "position": pos(1, 0), "expected": "y\n"}))
        second = "".join(json.dumps(e) + "\n" for e in (
            HEADER, {"kind": "open", "path": "other.py", "text": "z = 2\n"},
            {"kind": "complete", "path": "other.py", "position": pos(1, 0), "expected": "w\n"}))
        for n, text in enumerate((first, second), start=1):
            assert lsp_replayer.replay(parse_trace(text, f"t{n}.jsonl")).sync_ok
            folders = lsp_replayer.engine.stats()["workspace_folders"]
            assert folders == [(lsp_replayer.root / f"trace-{n}").as_uri()]
    finally:
        lsp_replayer.close()
