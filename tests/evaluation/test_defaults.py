"""Issue 23: the defaults come from one place (completion/options.py) and compose the mission;
every entry point that is not told otherwise runs them, and says which mechanisms run."""
import asyncio
import json

import pytest
from lsprotocol import types as lsp
from pytest_lsp import LanguageClient

from inkling.runtime.model_loader import usable_cores
from inkling.completion.options import InklingOptions
from inkling.cli.main import _options_from_args, _parser, main
from inkling.cli.replay import replay_options


def test_the_defaults_compose_the_mission():
    o = InklingOptions()
    o.validate()
    assert (o.cache.mode, o.completion.draft, o.completion.monitor,
            o.completion.token_healing) == ("pie", "auto", "on", True)
    assert (o.completion.decoder, o.completion.drafts, o.completion.automatic_drafts,
            o.completion.beam_width, o.completion.reread_lines) == ("beam", 3, 1, 8, 2)
    assert o.mechanisms() == {"cache": "pie", "draft": "auto", "monitor": "on",
                              "decoder": "beam", "drafts": 3, "automaticDrafts": 1,
                              "tokenHealing": True}
    assert o.mechanisms_text() == "pie cache, auto drafts, monitor, healing, 3 beam"


def test_mechanisms_follow_the_options():
    o = InklingOptions().merged({"completion": {"draft": "none", "monitor": "off",
                                                "tokenHealing": False, "drafts": 1},
                                 "cache": {"mode": "full"}})
    assert o.mechanisms()["decoder"] == "beam"       # one invoked draft, by beam search
    assert o.mechanisms_text() == "full cache, 1 beam"
    o = o.merged({"completion": {"decoder": "superposed"}})
    assert o.mechanisms()["decoder"] == "greedy"     # one draft is decoded greedily
    assert o.mechanisms_text() == "full cache, 1 draft"


@pytest.mark.parametrize("command", [["replay", "t.jsonl"], ["complete", "a.py", "--line", "1",
                                                              "--col", "1"]])
def test_flags_not_given_leave_the_options_tree_to_decide(command):
    args = _parser().parse_args(command)
    for flag in ("draft", "monitor", "decoder", "drafts", "cache"):
        assert getattr(args, flag) is None, flag
    build = replay_options if command[0] == "replay" else _options_from_args
    assert build(args).as_dict() == InklingOptions().as_dict()


def test_flags_given_override_the_defaults():
    args = _parser().parse_args(["complete", "a.py", "--line", "1", "--col", "1", "--draft",
                                 "none", "--monitor", "off", "--decoder", "branches",
                                 "--drafts", "2", "--cache", "full", "--fim-order", "psm"])
    o = _options_from_args(args)
    assert (o.completion.draft, o.completion.monitor, o.completion.decoder, o.completion.drafts,
            o.cache.mode, o.completion.fim_order) == ("none", "off", "branches", 2, "full", "psm")
    args = _parser().parse_args(["replay", "t.jsonl", "--draft", "prompt-lookup", "--monitor",
                                 "off", "--decoder", "greedy"])
    c = replay_options(args).completion
    assert (c.draft, c.monitor, c.decoder, c.drafts, c.automatic_drafts) == (
        "prompt-lookup", "off", "greedy", 3, 1)


def test_help_names_the_defaults(capsys):
    with pytest.raises(SystemExit):
        main(["replay", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "drafting mode (default: auto)" in text
    assert "monitor-guided decoding (default: on)" in text


def test_replay_config_shows_the_defaults(tmp_path, tiny_model_dir, capsys):
    trace = tmp_path / "t.jsonl"
    text = "import os\n\n\ndef f(a):\n    return a\n"
    trace.write_text("\n".join(json.dumps(e) for e in (
        {"kind": "header", "version": 1, "name": "t", "language": "python"},
        {"kind": "open", "path": "a.py", "text": text},
        {"kind": "complete", "path": "a.py", "position": {"line": 4, "character": 11},
         "expected": "\n"})) + "\n")
    code = main(["replay", str(trace), "--model", str(tiny_model_dir), "--datastore", "none",
                 "--json", "-"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0, report["errors"]
    defaults = InklingOptions().as_dict()
    for section in ("completion", "cache"):
        for key, value in defaults[section].items():
            if key != "datastore":
                assert report["config"][section][key] == value, (section, key)
    threads = report["config"]["runtime"]["threads"]      # what the thread choice measured
    assert threads["counts"][0] == 1 and set(threads) == {"counts", "adaptive", "threads",
                                                        "one_row_ms"}


@pytest.fixture(scope="module")
def server_options(tiny_model_dir) -> dict:
    # only the model path: what an editor with default settings sends besides nothing
    return {"model": {"path": str(tiny_model_dir)}, "completion": {"datastore": "none"}}


@pytest.mark.slow
@pytest.mark.asyncio(loop_scope="module")
async def test_stats_and_status_say_which_mechanisms_run(client: LanguageClient):
    stats = await client.protocol.send_request_async("inkling/stats", {})
    expected = InklingOptions().mechanisms()
    assert dict(stats.mechanisms._asdict()) == expected
    # model.forward auto: the native forward where it builds (g++ is a dependency), said
    assert (stats.forward.kind, stats.forward.note) == ("native", ""), stats.forward
    # model.threads 0: one thread, measured against every core where there are several
    cores = usable_cores()
    assert stats.threads.counts == ([1, cores] if cores > 1 else [1]), stats.threads
    assert stats.threads.adaptive == (cores > 1)
    # draft auto: the mode chosen at load from the forwards it timed, said with them
    d = stats.drafting
    assert (d.asked, d.forward) == ("auto", "native") and d.mode in ("suffix", "none")
    ms = dict(zip(d.rows, d.forward_ms))
    assert set(ms) == {1, 8, 16} and all(v > 0 for v in ms.values()), ms
    assert (d.mode == "suffix") == (ms[16] / ms[1] < 2.0), d     # the prior: 1 token a tree
    assert "a forward of 16 rows costs" in d.reason
    assert ("drafting pays" if d.mode == "suffix" else "would cost latency") in d.reason
    ready = [s for s in client.statuses if s.state == "ready"]
    assert ready, client.statuses
    text = InklingOptions().mechanisms_text()
    assert ready[-1].mechanisms == text and text in ready[0].message
    client.workspace_did_change_configuration(lsp.DidChangeConfigurationParams(
        settings={"inkling": {"completion": {"draft": "none", "monitor": "off"}}}))
    for _ in range(50):
        stats = await client.protocol.send_request_async("inkling/stats", {})
        if stats.mechanisms.draft == "none":
            break
        await asyncio.sleep(0.1)
    assert (stats.mechanisms.draft, stats.mechanisms.monitor) == ("none", "off")
