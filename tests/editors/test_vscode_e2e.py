"""The VS Code extension in a real VS Code: the built .vsix installed into code-server (VS
Code in the browser, from npm) and driven in Debian's headless Chromium by playwright-core
(editors/vscode/e2e/drive.js), as a user would.

With the extension's default settings the server holds the options of `inkling serve` with
none (the stats command's log); then the user sets the branches decoder in settings.json;
typing shows ghost text in the DOM, Alt+] changes it, Tab inserts it, the status bar says
ready with the latency, and "inkling: Show server stats" counts the acceptance; a restart
on purpose logs no error. Screenshots go to INKLING_E2E_ARTIFACTS when set (the README's is
editors/vscode/screenshot.png, from this test).

Needs editors/vscode/e2e/install.sh (code-server and playwright-core), editors/vscode's
node_modules (to package the .vsix) and Debian's chromium; .ci/run installs them all and
sets INKLING_E2E_REQUIRED=1, which turns a missing piece into a failure. A default local
run without them skips, saying what is missing.
"""
from __future__ import annotations

import dataclasses
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXTENSION = REPO / "editors" / "vscode"
E2E = EXTENSION / "e2e"
CODE_SERVER = Path(os.environ.get("INKLING_CODE_SERVER",
                                  E2E / "node_modules" / ".bin" / "code-server"))
CHROMIUM = os.environ.get("INKLING_E2E_CHROMIUM", "/usr/bin/chromium")
NODE = shutil.which("node")
NPX = shutil.which("npx")

SAMPLE = '''import os


def read_lines(path):
    """The lines of a text file, without line ends."""
    with open(path) as handle:
        return handle.read().splitlines()


'''


def _missing() -> list[str]:
    missing = []
    if NODE is None or NPX is None:
        missing.append("node / npx")
    if not CODE_SERVER.exists():
        missing.append(f"code-server ({CODE_SERVER}: run editors/vscode/e2e/install.sh)")
    if not (E2E / "node_modules" / "playwright-core").is_dir():
        missing.append("playwright-core (run editors/vscode/e2e/install.sh)")
    if not Path(CHROMIUM).exists():
        missing.append(f"chromium ({CHROMIUM}: apt-get install chromium)")
    if not (EXTENSION / "node_modules" / "@vscode" / "vsce").is_dir():
        missing.append("editors/vscode/node_modules (npm ci in editors/vscode)")
    return missing


MISSING = _missing()
if MISSING and os.environ.get("INKLING_E2E_REQUIRED") == "1":
    raise RuntimeError("INKLING_E2E_REQUIRED=1 but the VS Code end-to-end test cannot run: "
                       + "; ".join(MISSING))
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(bool(MISSING), reason="VS Code end-to-end test: missing "
                       + "; ".join(MISSING)),
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_http(port: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return True
        except OSError:
            time.sleep(0.2)
    return False


def _options_logged(user_data: Path) -> list[dict]:
    """The `options` lines the stats command wrote to the extension's log, in order."""
    found = []
    for log in sorted(user_data.glob("logs/*/exthost*/inkling.inkling/inkling.log")):
        for line in log.read_text().splitlines():
            text = line.strip()
            if text.startswith("options    {"):
                found.append(json.loads(text[len("options    "):]))
    return found


def _log(user_data: Path) -> str:
    return "\n".join(p.read_text() for p in
                     sorted(user_data.glob("logs/*/exthost*/inkling.inkling/inkling.log")))


@pytest.fixture()
def code_server(tmp_path):
    """code-server on a free loopback port with the freshly packaged .vsix installed, a
    workspace with a Python file, and user settings with only the Python to run the server."""
    vsix = tmp_path / "inkling.vsix"
    built = subprocess.run([NPX, "--no-install", "@vscode/vsce", "package", "-o", str(vsix)],
                           cwd=EXTENSION, capture_output=True, text=True, timeout=300)
    assert built.returncode == 0 and vsix.is_file(), built.stdout + built.stderr
    home = tmp_path / "home"
    user_data, extensions, workspace = tmp_path / "user-data", tmp_path / "extensions", \
        tmp_path / "ws"
    for d in (home, user_data / "User", extensions, workspace):
        d.mkdir(parents=True)
    env = {**os.environ, "XDG_CONFIG_HOME": str(home / "config"),
           "XDG_DATA_HOME": str(home / "data"), "XDG_CACHE_HOME": str(home / "cache"),
           "OMP_NUM_THREADS": "1"}
    base = [str(CODE_SERVER), "--config", str(home / "config.yaml"),
            "--user-data-dir", str(user_data), "--extensions-dir", str(extensions)]
    (home / "config.yaml").write_text("auth: none\ncert: false\n")
    installed = subprocess.run([*base, "--install-extension", str(vsix)], env=env,
                               capture_output=True, text=True, timeout=120)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    settings = user_data / "User" / "settings.json"
    settings.write_text(json.dumps({
        "inkling.pythonPath": sys.executable,          # the one inkling setting: no server options
        "workbench.startupEditor": "none",
        "security.workspace.trust.enabled": False,
        "telemetry.telemetryLevel": "off",
        "extensions.autoCheckUpdates": False,
        "extensions.autoUpdate": False,
        "update.mode": "none",
        "workbench.colorTheme": "Default Light Modern",
        "editor.minimap.enabled": False,
        "editor.quickSuggestions": {"other": False, "comments": False, "strings": False},
        "editor.suggestOnTriggerCharacters": False,
        "editor.wordBasedSuggestions": "off",
    }, indent=2))
    (workspace / "lines.py").write_text(SAMPLE)
    port = _free_port()
    log = open(tmp_path / "code-server.log", "w")
    proc = subprocess.Popen([*base, "--auth", "none", "--bind-addr", f"127.0.0.1:{port}",
                             "--disable-telemetry", "--disable-update-check",
                             "--disable-workspace-trust", "--disable-getting-started-override",
                             str(workspace)],
                            env=env, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        assert _wait_http(port, 60), (tmp_path / "code-server.log").read_text()
        yield {"url": f"http://127.0.0.1:{port}/?folder={workspace}", "settings": settings,
               "user_data": user_data, "workspace": workspace, "env": env,
               "log": tmp_path / "code-server.log"}
    finally:
        try:
            os.killpg(proc.pid, signal.SIGTERM)   # code-server, its extension host, the server
            proc.wait(10)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        log.close()


def test_vscode_end_to_end(code_server, tmp_path):
    from inkling.completion.options import InklingOptions
    out = tmp_path / "out"
    run = subprocess.run([NODE, "drive.js", code_server["url"], "lines.py", str(out),
                          str(code_server["settings"])],
                         cwd=E2E, env=code_server["env"], capture_output=True, text=True,
                         timeout=500)
    artifacts = os.environ.get("INKLING_E2E_ARTIFACTS")
    if artifacts:
        shutil.copytree(out, artifacts, dirs_exist_ok=True)
    steps = {s["step"]: s for s in json.loads((out / "report.json").read_text())["steps"]}
    where = (run.stdout[-4000:] + run.stderr[-4000:] + "\n" +
             code_server["log"].read_text()[-2000:] + "\n" + _log(code_server["user_data"]))
    assert run.returncode == 0 and "done" in steps, where

    # default settings: the server holds the options of `inkling serve` with none; the
    # decoder the user then set is all that changed
    logged = _options_logged(code_server["user_data"])
    assert len(logged) == 2, where
    assert logged[0] == dataclasses.asdict(InklingOptions()), logged[0]
    assert logged[1] == dataclasses.asdict(
        InklingOptions().merged({"completion": {"decoder": "branches"}})), logged[1]

    # ghost text in the DOM, another draft after Alt+], inserted by Tab
    ghost, nxt = steps["ghost text"]["ghost"], steps["next draft"]["ghost"]
    assert ghost.strip() and nxt.strip() and nxt != ghost, (ghost, nxt)
    assert f"    return os.{nxt}" in steps["accepted"]["text"].split("\n"), steps["accepted"]
    # the draft left the ghost text for the buffer; what shows now, if anything, is the
    # next suggestion VS Code asked for after the insertion (e.g. `(path)` after `path.exists`)
    assert steps["accepted"]["ghost"] != nxt, steps["accepted"]

    # the status bar: ready, with the last completion's latency
    status = steps["status"]["status"]
    assert "ready, last completion" in status["label"] and status["text"].endswith(" ms"), status

    # the extension's stats command: the acceptance counted
    assert "1 accepted" in steps["stats"]["toast"], steps["stats"]
    assert "answered" in steps["stats with default settings"]["toast"]

    # a restart on purpose came back, and nothing in the log is an error
    assert "ready" in steps["restarted"]["status"]["label"]
    assert "[error]" not in _log(code_server["user_data"]), _log(code_server["user_data"])
    for name in ("screenshot.png", "next-draft.png", "accepted.png", "stats.png"):
        assert (out / name).stat().st_size > 10_000, name
