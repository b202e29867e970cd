"""`inkling replay --ray` on a local Ray instance: the per-trace results of the in-process
replay, a trace whose actor is killed mid-run run again on a new actor, and the command
line's report with the same keys as a local one."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install -e '.[ray]')")

from inkling.completion.options import InklingOptions  # noqa: E402
from inkling.evaluation.ray_replay import RayOptions, replay_on_ray  # noqa: E402
from inkling.evaluation.replay_result import summarise  # noqa: E402
from inkling.evaluation.trace_file import read_trace  # noqa: E402

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]
TRACES = sorted(str(p) for p in (REPO / "benchmarks" / "traces").glob("*.jsonl"))
COMPARED = ("exact_line", "edit_similarity", "tokens_per_forward", "sync_ok", "completions",
            "checks", "syntax_valid")


@pytest.fixture(scope="module")
def local_ray():
    ray.init(num_cpus=4, include_dashboard=False, log_to_driver=False, logging_level="ERROR",
             configure_logging=False)
    yield
    ray.shutdown()


def _options(model_dir) -> InklingOptions:
    # no suffix drafting: which sources it searches follows measured times, so its tokens
    # per forward (not its suggestions) vary from run to run, in process or not
    return InklingOptions().merged({"model": {"path": str(model_dir), "device": "cpu"},
                                    "completion": {"max_new_tokens": 6, "max_block_tokens": 8,
                                                   "draft": "prompt-lookup"}})


def _in_process(options, traces):
    from inkling.completion.engine import Engine
    from inkling.evaluation.replay import Replayer
    from inkling.evaluation.syntax_check import SyntaxChecker
    runtime = Engine(options).load_model()
    replayer = Replayer(options, runtime, SyntaxChecker())
    return [replayer.replay(t) for t in traces]


def _same(local, sharded) -> None:
    assert [r.source for r in local] == [r.source for r in sharded]
    for a, b in zip(local, sharded):
        sa, sb = summarise([a]), summarise([b])
        assert {k: sa[k] for k in COMPARED} == {k: sb[k] for k in COMPARED}, a.source
        assert [c.drafts for c in a.completions] == [c.drafts for c in b.completions]


def test_two_actors_give_the_in_process_results(local_ray, tiny_model_dir):
    options = _options(tiny_model_dir)
    traces = [read_trace(p) for p in TRACES]
    run = replay_on_ray(options, traces, RayOptions(actors=2))
    assert not run.interrupted and all(r is not None for r in run.results)
    _same(_in_process(options, traces), run.results)
    assert run.config["actors_started"] == 2 and run.config["reruns"] == 0
    assert len(run.config["workers"]) == 2 and all(w["node"] for w in run.config["workers"])
    assert run.config["model_shipped"] and run.runtime["model"] == str(tiny_model_dir)


def test_a_gguf_file_is_shipped_to_the_actors_as_a_file(local_ray):
    """A GGUF model (one file, not a folder) reaches the actors whole and replays there as
    in process."""
    from zoo_models import zoo_gguf
    gguf = zoo_gguf("qwen2.5-coder-0.5b", "f16")
    options = _options(gguf)
    traces = [read_trace(TRACES[0])]
    run = replay_on_ray(options, traces, RayOptions(actors=1))
    assert not run.interrupted and run.results[0] is not None
    _same(_in_process(options, traces), run.results)
    assert run.config["model_shipped"] and run.runtime["model"] == str(gguf)


def test_compared_options_are_trace_by_combination_tasks(local_ray, tiny_model_dir):
    base = _options(tiny_model_dir)
    other = base.merged({"completion": {"draft": "prompt-lookup", "max_new_tokens": 3}})
    traces = [read_trace(p) for p in TRACES[:2]]
    run = replay_on_ray([base, other], traces, RayOptions(actors=2))
    assert [len(r) for r in run.results] == [2, 2]
    _same(_in_process(base, traces), run.results[0])
    _same(_in_process(other, traces), run.results[1])


def test_a_killed_actor_has_its_trace_run_again(local_ray, tiny_model_dir):
    options = _options(tiny_model_dir)
    traces = [read_trace(p) for p in TRACES]
    killed = []

    def kill_first(actor, index):
        if not killed:
            killed.append(index)
            ray.kill(actor, no_restart=True)             # dies with its trace in flight

    run = replay_on_ray(options, traces, RayOptions(actors=2, retries=2), on_submit=kill_first)
    assert killed and run.config["reruns"] >= 1 and run.config["actors_started"] >= 3
    assert all(r is not None and r.sync_ok for r in run.results)
    _same(_in_process(options, traces), run.results)


def test_an_actor_that_always_dies_fails_only_its_trace(local_ray, tiny_model_dir):
    options = _options(tiny_model_dir)
    traces = [read_trace(p) for p in TRACES]

    def kill_on_first_trace(actor, index):
        if index == 0:
            ray.kill(actor, no_restart=True)

    run = replay_on_ray(options, traces, RayOptions(actors=2, retries=1),
                        on_submit=kill_on_first_trace)
    first, *rest = run.results
    assert not first.sync_ok and "died on each of 2 attempts" in first.failures[0].message
    assert all(r.sync_ok and r.completions for r in rest)


def test_the_evaluation_sharded_by_file_gives_the_in_process_figures(local_ray, tiny_model_dir):
    from inkling.completion.engine import Engine
    from inkling.evaluation.held_out import evaluate_next_line, evaluation_options
    from inkling.evaluation.ray_evaluate import evaluate_on_ray
    base = InklingOptions().merged({"model": {"path": str(tiny_model_dir), "device": "cpu"},
                                    "completion": {"max_new_tokens": 4}})
    jobs = [("stdlib", "spm"), ("stdlib", "psm")]
    sharded, run = evaluate_on_ray(str(tiny_model_dir), base, jobs, 2, 0, RayOptions(actors=2))
    engine = Engine(base)
    for (held_out, order), got in zip(jobs, sharded):
        local = evaluate_next_line(str(tiny_model_dir), order, 2, 0, engine, held_out)
        assert (got.order, got.lines, got.exact, got.per_file, got.suggestions) == \
            (local.order, local.lines, local.exact, local.per_file, local.suggestions)
        assert got.lines == 2 * len(got.per_file) and any(got.suggestions)
    assert len(run.config["workers"]) == 2
    assert evaluation_options("", "spm", base).model.device == "cpu"


def test_the_command_line_report_has_the_local_keys(tiny_model_dir, tmp_path):
    common = [sys.executable, "-m", "inkling.cli.main", "replay", TRACES[0], "--model",
              str(tiny_model_dir), "--max-new-tokens", "4", "--draft", "prompt-lookup"]
    local = subprocess.run(common + ["--json", str(tmp_path / "local.json")],
                           capture_output=True, text=True, timeout=600)
    sharded = subprocess.run(common + ["--json", str(tmp_path / "ray.json"), "--ray",
                                       "--ray-actors", "1", "--report",
                                       str(tmp_path / "ray.html")],
                             capture_output=True, text=True, timeout=600)
    assert local.returncode == 0 and sharded.returncode == 0, sharded.stderr[-2000:]
    a, b = (json.loads((tmp_path / n).read_text()) for n in ("local.json", "ray.json"))
    assert set(a) == set(b) and set(a["per_trace"]) == set(b["per_trace"])
    assert set(b["config"]) == set(a["config"]) | {"ray"}
    # completion.draft auto is chosen by timed forwards on each machine: the local replay
    # reports its choice (config.runtime.drafting); the Ray actors choose their own
    local_runtime = dict(a["config"]["runtime"])
    assert local_runtime.pop("drafting")["mode"] in ("none", "suffix")
    assert b["config"]["runtime"] == local_runtime
    for key in COMPARED:
        assert a[key] == b[key], key
    assert (tmp_path / "ray.html").stat().st_size > 1000
    assert "Traceback" not in sharded.stderr


def test_without_ray_the_flag_says_how_to_install_it(tiny_model_dir, tmp_path):
    code = ("import sys, builtins\n"
            "real = builtins.__import__\n"
            "def fake(name, *a, **k):\n"
            "    if name == 'ray' or name.startswith('ray.'):\n"
            "        raise ImportError('no ray')\n"
            "    return real(name, *a, **k)\n"
            "builtins.__import__ = fake\n"
            "from inkling.cli.main import main\n"
            f"sys.exit(main(['replay', {TRACES[0]!r}, '--model', {str(tiny_model_dir)!r}, "
            "'--ray']))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 2 and "pip install -e '.[ray]'" in out.stderr, out.stderr
