"""The VS Code extension (editors/vscode): compiles, passes its unit tests, and drives the
real server.

Runs only where its node_modules are installed (`npm ci` in editors/vscode); CI does that
in .ci/run, which also runs the npm steps and builds the .vsix itself. The end-to-end test
loads the compiled extension under Node with a stand-in for the `vscode` module
(editors/vscode/test-integration/fake-vscode.js): VS Code itself cannot be downloaded
offline, and the stand-in records what the extension registers and shows.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

EXTENSION = Path(__file__).resolve().parents[1] / "editors" / "vscode"
NPM = shutil.which("npm")
NODE = shutil.which("node")

pytestmark = pytest.mark.skipif(
    NPM is None or not (EXTENSION / "node_modules" / "vscode-languageclient").is_dir(),
    reason="npm or editors/vscode/node_modules is missing (run npm ci in editors/vscode)")


def _npm(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([NPM, *args], cwd=EXTENSION, capture_output=True, text=True,
                          timeout=300)


def test_extension_compiles_and_its_unit_tests_pass():
    compiled = _npm("run", "compile")
    assert compiled.returncode == 0, compiled.stdout + compiled.stderr
    tested = _npm("test")
    out = tested.stdout + tested.stderr
    assert tested.returncode == 0, out
    assert "# fail 0" in out and "# pass " in out, out


def test_package_manifest_needs_no_prompts():
    """vsce packages without asking: license, repository, publisher, engine and a LICENSE."""
    import json
    pkg = json.loads((EXTENSION / "package.json").read_text())
    assert pkg["license"] and pkg["repository"] and pkg["publisher"]
    assert pkg["engines"]["vscode"]
    assert (EXTENSION / "LICENSE").is_file() and (EXTENSION / "README.md").is_file()
    assert (EXTENSION / "package-lock.json").is_file()
    commands = {c["command"] for c in pkg["contributes"]["commands"]}
    assert {"inkling.toggle", "inkling.showStats", "inkling.restart"} <= commands
    bound = {k["command"] for k in pkg["contributes"]["keybindings"]}
    assert {"editor.action.inlineSuggest.showNext",
            "editor.action.inlineSuggest.showPrevious"} <= bound


def test_extension_drives_the_real_server(tmp_path, request):
    """Status to ready, an invoked inline completion with several drafts, the accept command
    reaching the server (stats), settings sent again on change, toggle off."""
    from inkling.models import BUNDLED_MODEL_DIR
    settings = {"inkling.completion.maxNewTokens": 8}
    if not (BUNDLED_MODEL_DIR / "config.json").is_file():
        settings["inkling.model.path"] = str(request.getfixturevalue("tiny_model_dir"))
    compiled = _npm("run", "compile")
    assert compiled.returncode == 0, compiled.stdout + compiled.stderr
    env = {**os.environ, "OMP_NUM_THREADS": "1",
           "INKLING_TEST_SERVER": json.dumps([sys.executable, "-m", "inkling.lsp.cli", "serve"]),
           "INKLING_TEST_OPTIONS": json.dumps(settings)}
    run = subprocess.run([NODE, "--test", "test-integration/real-server.test.js"], cwd=EXTENSION,
                         env=env, capture_output=True, text=True, timeout=240)
    out = run.stdout + run.stderr
    assert run.returncode == 0 and "# pass 1" in out, out
