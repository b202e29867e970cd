"""The VS Code extension in a real VS Code, installed the way the README says: the built
.vsix installed into code-server (VS Code in the browser, from npm) and driven in Debian's
headless Chromium by playwright-core (editors/vscode/e2e/drive.js), as a user would.

The README's VS Code steps, and what this test does for each:
1. `./scripts/setup.sh` installs the server into `.venv`: the test runs from that `.venv`
   (`.venv/bin/pytest`) and starts the server as `.venv/bin/inkling serve`.
2. `cd editors/vscode && npm ci && npm run package` builds the `.vsix`: `npm ci` is CI's
   (.ci/run) or the developer's, as the test needs editors/vscode's node_modules; the test
   runs `npm run package` itself (into its temporary folder).
3. `code --install-extension editors/vscode/inkling-0.1.0.vsix`: `code-server
   --install-extension` with the packaged file.
4. `inkling.serverCommand` set to the absolute path of `.venv/bin/inkling` in settings.json
   (`inkling` is not on the test's PATH): the only inkling setting the user writes.

Then: with those settings the server holds the options of `inkling serve` with none (the
stats command's log); the Settings editor filtered to the extension shows its grouped
settings (vscode-settings.png) and the user sets the drafts to cycle through there; typing
shows ghost text in the DOM, the line a programmer would write (SAMPLE is chosen so that the
bundled model's greedy first draft is right: `inkling complete --decoder greedy` there gives
it), Alt+] cycles the drafts round to the first, Tab inserts it, the status bar says ready
with the latency, and "inkling: Show server stats" counts the acceptance; a restart on purpose
logs no error. Frames of the editor make the animated capture (vscode-ghost-text.gif, by
editors/vscode/e2e/frames_gif.py); it and the screenshots go to INKLING_E2E_ARTIFACTS when set
(docs/media/vscode-ghost-text.gif, docs/media/vscode-settings.png and
editors/vscode/screenshot.png are copies from this test).

Needs editors/vscode/e2e/install.sh (code-server and playwright-core), editors/vscode's
node_modules (to package the .vsix), Debian's chromium and Pillow; .ci/run installs them all
and sets INKLING_E2E_REQUIRED=1, which turns a missing piece into a failure. A default local
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

from inkling.runtime.native_build import cache_root as native_cache

REPO = Path(__file__).resolve().parents[2]
EXTENSION = REPO / "editors" / "vscode"
E2E = EXTENSION / "e2e"
CODE_SERVER = Path(os.environ.get("INKLING_CODE_SERVER",
                                  E2E / "node_modules" / ".bin" / "code-server"))
CHROMIUM = os.environ.get("INKLING_E2E_CHROMIUM", "/usr/bin/chromium")
NODE = shutil.which("node")
NPX = shutil.which("npx")
NPM = shutil.which("npm")
INKLING = Path(sys.executable).with_name("inkling")     # .venv/bin/inkling (scripts/setup.sh)

# The file the user types in: a new line after its last one, `        self.`, where the bundled
# model's greedy draft (an automatic completion's) is `price = price`.
SAMPLE = '''"""Items of an order."""


class Item:
    """One line of an order: what, at what price, how many."""

    def __init__(self, name, price, quantity):
        self.name = name'''
TYPED = "self."
FIRST_DRAFT = "price = price"
EXPECTED_LINE = "        self.price = price"
DRAFTS = 5                    # what drive.js sets inkling.completion.drafts to
GIF_LIMIT = 1_500_000         # bytes: the README shows the capture


def _missing() -> list[str]:
    missing = []
    if NODE is None or NPX is None or NPM is None:
        missing.append("node / npm / npx")
    if not INKLING.exists():
        missing.append(f"inkling ({INKLING}: run ./scripts/setup.sh)")
    try:
        import PIL  # noqa: F401  (frames_gif.py's; the report extra's matplotlib brings it)
    except ImportError:
        missing.append("Pillow (pip install pillow)")
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


def _package(vsix: Path) -> None:
    """The README's `npm run package` (vsce package), written to ``vsix``; `npx vsce package`
    where package.json has no such script."""
    scripts = json.loads((EXTENSION / "package.json").read_text()).get("scripts", {})
    command = [NPM, "run", "package", "--", "-o", str(vsix)] if "package" in scripts else \
        [NPX, "--no-install", "@vscode/vsce", "package", "-o", str(vsix)]
    built = subprocess.run(command, cwd=EXTENSION, capture_output=True, text=True, timeout=600)
    assert built.returncode == 0 and vsix.is_file(), built.stdout + built.stderr


def _setting_groups() -> list[str]:
    """The titles of the extension's settings groups, as package.json declares them."""
    configuration = json.loads((EXTENSION / "package.json").read_text())["contributes"][
        "configuration"]
    return [c["title"] for c in (configuration if isinstance(configuration, list)
                                 else [configuration])]


@pytest.fixture()
def code_server(tmp_path):
    """code-server on a free loopback port with the freshly packaged .vsix installed, a
    workspace with a Python file, and user settings whose one inkling setting is the server's
    command."""
    vsix = tmp_path / "inkling.vsix"
    _package(vsix)
    home = tmp_path / "home"
    user_data, extensions, workspace = tmp_path / "user-data", tmp_path / "extensions", \
        tmp_path / "ws"
    for d in (home, user_data / "User", extensions, workspace):
        d.mkdir(parents=True)
    env = {**os.environ, "XDG_CONFIG_HOME": str(home / "config"),
           "XDG_DATA_HOME": str(home / "data"), "XDG_CACHE_HOME": str(home / "cache"),
           "OMP_NUM_THREADS": "1",
           # the native forward built where the user's inkling keeps it (`inkling build-native`)
           "INKLING_NATIVE_CACHE": str(native_cache())}
    base = [str(CODE_SERVER), "--config", str(home / "config.yaml"),
            "--user-data-dir", str(user_data), "--extensions-dir", str(extensions)]
    (home / "config.yaml").write_text("auth: none\ncert: false\n")
    installed = subprocess.run([*base, "--install-extension", str(vsix)], env=env,
                               capture_output=True, text=True, timeout=120)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    settings = user_data / "User" / "settings.json"
    settings.write_text(json.dumps({
        "inkling.serverCommand": [str(INKLING), "serve"],   # the one inkling setting
        "editor.fontSize": 16,                          # the capture's, for reading,
        "editor.cursorBlinking": "solid",               # and a cursor in every frame
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
    (workspace / "order.py").write_text(SAMPLE)
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


def _capture(out: Path) -> Path:
    """The animated capture from drive.js's frames (editors/vscode/e2e/frames_gif.py)."""
    gif = out / "vscode-ghost-text.gif"
    made = subprocess.run([sys.executable, str(E2E / "frames_gif.py"), str(out / "frames.json"),
                           str(gif)], capture_output=True, text=True, timeout=300)
    assert made.returncode == 0, made.stdout + made.stderr
    return gif


def test_vscode_end_to_end(code_server, tmp_path):
    from PIL import Image

    from inkling.completion.options import InklingOptions
    out = tmp_path / "out"
    run = subprocess.run([NODE, "drive.js", code_server["url"], "order.py", str(out),
                          str(code_server["settings"]), TYPED],
                         cwd=E2E, env=code_server["env"], capture_output=True, text=True,
                         timeout=900)
    gif = _capture(out) if (out / "frames.json").is_file() else None
    artifacts = os.environ.get("INKLING_E2E_ARTIFACTS")
    if artifacts:
        shutil.copytree(out, artifacts, dirs_exist_ok=True)
    steps = {s["step"]: s for s in json.loads((out / "report.json").read_text())["steps"]}
    where = (run.stdout[-4000:] + run.stderr[-4000:] + "\n" +
             code_server["log"].read_text()[-2000:] + "\n" + _log(code_server["user_data"]))
    assert run.returncode == 0 and "done" in steps, where

    # settings.json with the server's command only: the server holds the options of
    # `inkling serve` with none; the drafts the user then set are all that changed
    logged = _options_logged(code_server["user_data"])
    assert len(logged) == 2, where
    assert logged[0] == dataclasses.asdict(InklingOptions()), logged[0]
    assert logged[1] == dataclasses.asdict(
        InklingOptions().merged({"completion": {"drafts": DRAFTS}})), logged[1]

    # the settings page filtered to the extension lists each of its groups
    shown = steps["settings changed"]["groups"]
    assert all(any(g.startswith(title) for g in shown) for title in _setting_groups()), \
        (shown, _setting_groups())

    # ghost text in the DOM, right; Alt+] cycles other drafts round to it; Tab inserts it
    assert steps["ghost text"]["ghost"] == FIRST_DRAFT, steps["ghost text"]
    cycled = steps["drafts"]["cycled"]
    assert len(cycled) >= 2 and len(set(cycled)) == len(cycled), cycled
    assert steps["drafts"]["back"] == FIRST_DRAFT, steps["drafts"]
    accepted = steps["accepted"]["text"].split("\n")
    assert accepted[-1] == EXPECTED_LINE and SAMPLE.split("\n") == accepted[:-1], accepted

    # the status bar: ready, with the last completion's latency
    status = steps["status"]["status"]
    assert "ready, last completion" in status["label"] and status["text"].endswith(" ms"), status

    # the extension's stats command: the acceptance counted
    assert "1 accepted" in steps["stats"]["toast"], steps["stats"]
    assert "answered" in steps["stats with default settings"]["toast"]

    # a restart on purpose came back, and nothing in the log is an error
    assert "ready" in steps["restarted"]["status"]["label"]
    assert "[error]" not in _log(code_server["user_data"]), _log(code_server["user_data"])
    for name in ("screenshot.png", "next-draft.png", "accepted.png", "stats.png",
                 "vscode-settings.png"):
        assert (out / name).stat().st_size > 10_000, name

    # the animated capture: every frame, and small enough for the README
    with Image.open(gif) as capture:     # (Pillow merges a frame that repeats the last)
        assert capture.is_animated and capture.n_frames >= 6, capture.n_frames
    assert gif.stat().st_size < GIF_LIMIT, gif.stat().st_size
