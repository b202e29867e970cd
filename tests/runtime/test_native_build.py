"""The native forward's build (runtime/native_build.py, build_lock.py): a start never waits
on a build it cannot see.

The locking and time-limit tests run a fake compiler (a shell script that notes its pid,
sleeps and writes its output) into a tmp cache ($INKLING_NATIVE_CACHE): they are about the
build's process, not the kernel. The slow test compiles the real kernel: it kills a build
in the middle of its compile and shows that the next start answers at once with the
compact forward, and that the build then finishes in the background.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lsp_wire import Wire
from inkling.runtime import build_lock, native_build, native_llama
from inkling.runtime.errors import ModelError
from inkling.runtime.model_loader import load_runtime
from inkling.cache.prompt_cache import PromptCache

INKLING = Path(sys.executable).with_name("inkling")


def fake_compiler(folder: Path, seconds: float = 0.0, error: str = "") -> Path:
    """A compiler that notes its pid in ``runs`` beside it, sleeps ``seconds``, then fails
    with ``error`` or writes its ``-o`` output."""
    script = folder / "fake-c++"
    end = f'echo "{error}" >&2; exit 1' if error else 'echo module > "$out"'
    script.write_text("#!/bin/sh\n"
                      f'echo $$ >> "{folder / "runs"}"\n'
                      'for a in "$@"; do [ "$prev" = -o ] && out="$a"; prev="$a"; done\n'
                      f"sleep {seconds}\n{end}\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return script


def runs(folder: Path) -> list[int]:
    """The pids of the fake compiler's runs, in order."""
    path = folder / "runs"
    return [int(line) for line in path.read_text().split()] if path.exists() else []


@pytest.fixture
def fake(tmp_path, monkeypatch):
    """A tmp cache, a fake source and a fresh extension state; ``make(seconds, error)``
    sets $CXX to a fake compiler and returns the plan of the fake source."""
    monkeypatch.setenv(native_build.CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.delenv(native_build.LIMIT_ENV, raising=False)
    monkeypatch.setattr(native_llama, "EXTENSION_BUILD", native_llama._Extension())
    source = tmp_path / "fake.cpp"
    source.write_text("// a fake source: the fake compiler reads nothing\n")

    def make(seconds: float = 0.0, error: str = "") -> native_build.Plan:
        monkeypatch.setenv("CXX", str(fake_compiler(tmp_path, seconds, error)))
        return native_build.plan(source)
    make.folder, make.source = tmp_path, source
    return make


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_the_cpu_flags_follow_the_cpus_features(monkeypatch, tmp_path):
    assert native_build.cpu_flags({"sse2", "avx2", "fma", "f16c", "avx512f"}) == \
        ("-mavx2", "-mfma", "-mf16c")
    assert native_build.cpu_flags({"avx2", "fma"}) == ()        # no F16C: the default target
    assert native_build.cpu_flags(set()) == ()
    source = tmp_path / "a.cpp"
    source.write_text("")
    plans = {}
    for name, features in (("x86", {"avx2", "fma", "f16c"}), ("old", {"sse2"})):
        monkeypatch.setattr(native_build, "cpu_features", lambda f=features: set(f))
        plans[name] = native_build.plan(source)
    assert "-mavx2" in plans["x86"].command and "-mavx2" not in plans["old"].command
    assert "-avx2-" in plans["x86"].folder.name and "-default-" in plans["old"].folder.name
    assert "-march=native" not in plans["x86"].command


def test_one_build_serves_every_checkout_of_the_same_source(tmp_path):
    here, there = tmp_path / "a" / "llama_step.cpp", tmp_path / "b" / "llama_step.cpp"
    for path in (here, there):
        path.parent.mkdir()
        path.write_text("int x;")
    assert native_build.plan(here).folder == native_build.plan(there).folder
    assert str(there) in native_build.plan(there).command      # each compiles its own file
    there.write_text("int y;")
    assert native_build.plan(here).folder != native_build.plan(there).folder


def test_a_lock_left_by_a_dead_process_is_taken_over(fake, caplog):
    p = fake()
    gone = subprocess.Popen(["true"])
    gone.wait()
    p.folder.mkdir(parents=True)
    p.lock.write_text(json.dumps({"pid": gone.pid, "host": socket.gethostname(),
                                  "started": time.time() - 100}))
    assert build_lock.holder(p.lock) is None            # its process is gone: not held
    caplog.set_level("INFO")
    t0 = time.monotonic()
    assert native_build.build(p) == p.module and p.module.read_text() == "module\n"
    assert time.monotonic() - t0 < 10
    assert f"from pid {gone.pid} on" in caplog.text and "its process is gone" in caplog.text
    assert p.lock.read_text() == "" and len(runs(fake.folder)) == 1   # released, built once


def test_a_live_build_is_waited_for_and_not_started_twice(fake):
    p = fake(seconds=3)
    builder = subprocess.Popen([sys.executable, "-m", "inkling.runtime.native_build",
                                "--source", str(fake.source)], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 20
    while (who := build_lock.holder(p.lock)) is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert who is not None and who["pid"] == builder.pid and who["host"] == socket.gethostname()
    said = native_build.start_background(p, fake.source)
    assert said.startswith(f"a build is running (pid {builder.pid} on ")
    heard: list[str] = []
    assert native_build.build(p, heard.append) == p.module          # waited for it
    assert any(f"waiting for the native build of pid {builder.pid}" in h for h in heard)
    assert builder.wait(timeout=20) == 0 and len(runs(fake.folder)) == 1


def test_the_time_limit_stops_the_compiler(fake, monkeypatch):
    monkeypatch.setenv(native_build.LIMIT_ENV, "1")
    p = fake(seconds=60)
    t0 = time.monotonic()
    with pytest.raises(native_build.BuildFailed, match="ran past the time limit of 1 s"):
        native_build.build(p)
    assert time.monotonic() - t0 < 10
    [pid] = runs(fake.folder)
    assert not alive(pid)                                # the compiler's group was killed
    assert "time limit" in native_build.failure(p)
    assert not p.module.exists() and not list(p.folder.glob(".*.tmp.so"))
    assert build_lock.holder(p.lock) is None


def test_auto_serves_the_compact_forward_while_it_builds_and_after_it_failed(
        fake, monkeypatch, tiny_model_dir, caplog):
    monkeypatch.setenv(native_build.LIMIT_ENV, "2")
    fake(seconds=60)                                    # $CXX: a compile past its limit
    p = native_build.plan(native_llama.SOURCE)
    t0 = time.monotonic()
    rt = load_runtime(tiny_model_dir, device="cpu", dtype="float32")    # model.forward auto
    assert time.monotonic() - t0 < 30                    # no wait for the compile
    assert PromptCache(rt, "full").forward.name == "compact" and rt.forwards.build_pending()
    assert "not built yet: a build started in the background (pid" in rt.auto_note()
    assert "the next start the native one" in rt.auto_note()
    assert any("not built yet" in r.getMessage() for r in caplog.records
               if r.levelname == "WARNING")
    deadline = time.monotonic() + 60                     # the background build gives up
    while native_build.failure(p) is None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert "time limit of 2 s" in native_build.failure(p)
    monkeypatch.setattr(native_llama, "EXTENSION_BUILD", native_llama._Extension())
    again = load_runtime(tiny_model_dir, device="cpu", dtype="float32")   # the next start
    assert PromptCache(again, "full").forward.name == "compact" and again.forwards.build_failed()
    assert "time limit of 2 s" in again.auto_note()
    assert "`inkling build-native` tries again" in again.auto_note()
    assert len(runs(fake.folder)) == 1                   # a failure is not retried by auto


def test_a_failed_build_names_the_compilers_first_error(fake, tiny_model_dir):
    fake(error="llama_step.cpp:3:1: error: 'foo' was not declared in this scope")
    with pytest.raises(ModelError, match="did not build.*error: 'foo' was not declared"):
        load_runtime(tiny_model_dir, device="cpu", dtype="float32", forward="native")
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    done = subprocess.run([str(INKLING), "build-native"], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 1, done
    assert "did not build" in done.stderr and "error: 'foo' was not declared" in done.stderr
    assert len(runs(fake.folder)) == 2                   # the foreground tries again


@pytest.mark.slow
def test_the_server_serves_at_once_and_says_the_native_forward_is_building(
        fake, monkeypatch, tiny_model_dir):
    monkeypatch.setenv(native_build.LIMIT_ENV, "20")
    fake(seconds=60)                                    # $CXX: a compile still running
    w = Wire(tiny_model_dir)                            # model.forward auto
    try:
        said = "compact forward (the native forward is not built yet: a build started in " \
            "the background (pid"
        assert any(said in m for m in w.log_messages()), w.log_messages()
        forward = w.call("inkling/stats", {})["result"]["forward"]
        assert forward["kind"] == "compact", forward
        assert "the next start the native one" in forward["note"], forward
        w.open("file:///tmp/a.py", "def area(width, height):\n    return ")
        answer = w.wait(w.inline("file:///tmp/a.py", 1, 11), 60)
        assert "result" in answer, answer
        assert native_build.failure(native_build.plan(native_llama.SOURCE)) is None
    finally:
        w.kill()


def _children(pid: int) -> list[int]:
    found = []
    for stat_file in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat_file.read_text().rpartition(")")[2].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat_file.parent.name))
    return found


@pytest.mark.slow
def test_a_build_killed_mid_compile_leaves_the_next_start_serving(tmp_path):
    env = {**os.environ, native_build.CACHE_ENV: str(tmp_path / "cache")}
    env.pop("CXX", None)
    env.pop(native_build.LIMIT_ENV, None)
    first = subprocess.Popen([str(INKLING), "build-native"], env=env, start_new_session=True,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while not (compiler := _children(first.pid)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert compiler, "the build did not start its compiler"
    time.sleep(3)                                        # in the middle of the compile
    os.kill(first.pid, signal.SIGKILL)
    first.wait()
    os.killpg(compiler[0], signal.SIGKILL)               # spare the CPU: its orphaned compile
    [folder] = (tmp_path / "cache").iterdir()
    lock = folder / "build.lock"
    assert json.loads(lock.read_text())["pid"] == first.pid   # left naming the killed build
    assert build_lock.holder(lock) is None and not (folder / "inkling_llama_step.so").exists()

    code = tmp_path / "small.py"
    code.write_text("import os\n\ndef exists(path):\n    return os.path.\n")
    t0 = time.monotonic()
    done = subprocess.run([str(INKLING), "complete", str(code), "--line", "4", "--col", "20"],
                          env=env, capture_output=True, text=True, timeout=120)
    took = time.monotonic() - t0
    assert done.returncode == 0 and done.stdout.strip(), done
    assert "not built yet: a build started in the background" in done.stderr, done.stderr
    assert took < 30, f"the next start took {took:.0f} s"

    resumed = subprocess.run([str(INKLING), "build-native"], env=env, capture_output=True,
                             text=True, timeout=900)     # waits for the background build
    assert resumed.returncode == 0, resumed
    assert "waiting for the native build of pid" in resumed.stderr, resumed.stderr
    assert str(folder / "inkling_llama_step.so") in resumed.stdout
    kind = subprocess.run([sys.executable, "-c", "from inkling.runtime.model_loader import "
                           "load_runtime; from inkling.models import BUNDLED_MODEL_DIR; "
                           "print(load_runtime(BUNDLED_MODEL_DIR).forward_kind('auto'))"],
                          env=env, capture_output=True, text=True, timeout=300)
    assert kind.stdout.split() == ["native"], kind
