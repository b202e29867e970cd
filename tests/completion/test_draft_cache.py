"""``completion.draft auto``'s timing kept in the user cache (completion/drafting/draft_mode.py,
runtime/user_cache.py): measured once per machine, model, forward, dtype and threads; a second
load decides from it without a forward; a corrupt or stale record is measured again; and
``inkling complete`` never times forwards (it drafts nothing until something has measured)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from inkling.completion.drafting import draft_mode
from inkling.completion.drafting.draft_mode import DraftState, choice_for, known, resolved
from inkling.completion.engine import Engine
from inkling.completion.options import InklingOptions
from inkling.runtime.model_loader import load_runtime
from inkling.runtime.native_build import cache_root

PRIOR = 1.0


@pytest.fixture()
def cache_home(tmp_path, monkeypatch) -> Path:
    """An empty user cache (the native builds' folder kept where it is)."""
    monkeypatch.setenv("INKLING_NATIVE_CACHE", str(cache_root()))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture()
def model_dir(tiny_model_dir, tmp_path) -> Path:
    """A copy of the tiny model, so that its files can be touched."""
    return Path(shutil.copytree(tiny_model_dir, tmp_path / "model"))


def load(path: Path):
    return load_runtime(path, device="cpu", dtype="float32")


def records(cache_home: Path) -> list[Path]:
    return sorted((cache_home / "inkling" / "drafting").glob("*.json"))


def timed(runtime) -> tuple[draft_mode.DraftChoice, int]:
    """(the choice ``choice_for`` makes, forwards it ran)."""
    before = runtime.stats.forwards
    choice = choice_for(runtime, "auto", PRIOR)
    return choice, runtime.stats.forwards - before


def test_a_second_load_decides_from_the_cached_timing(model_dir, cache_home):
    first, forwards = timed(load(model_dir))
    assert first.state == DraftState.MEASURED and forwards > 0
    [record] = records(cache_home)
    body = json.loads(record.read_text())
    assert body["key"]["forward"] == first.forward and body["key"]["weights"]
    second_rt = load(model_dir)                                  # a new load: nothing kept
    second, forwards = timed(second_rt)
    assert forwards == 0 and second.state == DraftState.CACHED
    assert (second.mode, second.ms, second.forward) == (first.mode, first.ms, first.forward)
    assert second.reason == first.reason
    assert resolved(InklingOptions(), second_rt, PRIOR) == first.mode
    assert records(cache_home) == [record]


@pytest.mark.parametrize("damage", ["{not json", "", '{"key": {}, "body": {"ms": {}}}',
                                    "[1, 2]"])
def test_a_corrupt_record_is_measured_again(model_dir, cache_home, damage):
    timed(load(model_dir))
    [record] = records(cache_home)
    kept = json.loads(record.read_text())
    if damage.startswith('{"key": {}'):                          # its key, an empty body
        damage = json.dumps({"key": kept["key"], "body": {"ms": {"1": 1.0}}})
    record.write_text(damage)
    runtime = load(model_dir)
    assert known(runtime, "auto", PRIOR).state == DraftState.NOT_MEASURED
    again, forwards = timed(runtime)
    assert again.state == DraftState.MEASURED and forwards > 0
    assert json.loads(record.read_text())["key"] == kept["key"]       # written whole again


def test_changed_weights_are_measured_again(model_dir, cache_home):
    timed(load(model_dir))
    weights = next(model_dir.glob("*.safetensors"))
    st = weights.stat()
    os.utime(weights, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    again, forwards = timed(load(model_dir))
    assert again.state == DraftState.MEASURED and forwards > 0
    assert len(records(cache_home)) == 2


def test_a_completion_never_times_forwards_and_the_preparation_does(model_dir, cache_home,
                                                                  monkeypatch):
    calls = []
    real = draft_mode.forward_ms
    monkeypatch.setattr(draft_mode, "forward_ms",
                        lambda *a, **k: (calls.append(1), real(*a, **k))[1])
    options = InklingOptions().merged({"completion": {"datastore": "none",
                                                      "model_datastore": "none"}})
    runtime = load(model_dir)
    engine = Engine(options, runtime=runtime)
    engine.open("file:///w/a.py", "def area(w, h):\n    return ")
    assert not engine.uses_datastore
    before = runtime.stats.forwards
    from inkling.completion.document import Position
    result = engine.complete("file:///w/a.py", Position(1, 11))
    assert not calls and runtime.stats.forwards - before == result.forwards
    assert known(runtime, "auto", PRIOR).state == DraftState.NOT_MEASURED
    prepared = engine.prepare()
    assert calls == [1] and f"auto drafting: {engine.draft_mode(runtime)}" in prepared.done
    assert known(runtime, "auto", PRIOR).state == DraftState.MEASURED and records(cache_home)
    engine.shutdown()


@pytest.mark.slow
def test_inkling_complete_says_not_measured_and_measures_nothing(model_dir, cache_home,
                                                                tmp_path):
    source = tmp_path / "a.py"
    source.write_text("def area(w, h):\n    return \n")
    env = {**os.environ, "XDG_CACHE_HOME": str(cache_home),
           "INKLING_NATIVE_CACHE": str(cache_root())}

    def complete() -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "inkling.cli.main", "complete", str(source),
                               "--line", "2", "--col", "12", "--model", str(model_dir),
                               "--json"], capture_output=True, text=True, env=env, timeout=300)

    run = complete()
    assert run.returncode == 0, run.stderr
    assert "not measured yet" in run.stderr and not records(cache_home)
    timed(load(model_dir))                              # what the server's preparation does
    run = complete()
    assert run.returncode == 0, run.stderr
    assert "not measured yet" not in run.stderr, run.stderr      # the cached timing decides
    assert len(records(cache_home)) == 1


def test_a_timing_slowed_by_a_busy_machine_decides_the_load_only(model_dir, cache_home,
                                                                 monkeypatch):
    """One row costing over twice the widest tree is noise: used now, not kept for later."""
    noisy = {1: 40.0, 8: 2.0, 16: 3.0}
    monkeypatch.setattr(draft_mode, "forward_ms", lambda *a, **k: dict(noisy))
    runtime = load(model_dir)
    choice = choice_for(runtime, "auto", PRIOR)
    assert choice.ms == noisy and choice.mode == "suffix" and not records(cache_home)
    monkeypatch.setattr(draft_mode, "forward_ms", lambda *a, **k: {1: 1.0, 8: 3.0, 16: 6.0})
    kept = choice_for(load(model_dir), "auto", PRIOR)
    assert kept.mode == "none" and len(records(cache_home)) == 1
