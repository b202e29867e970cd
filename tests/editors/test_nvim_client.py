"""The Neovim plugin (editors/nvim) in a real headless Neovim, driven over its RPC API.

End to end: Neovim starts the real server (the bundled model when it is in the checkout,
else the tiny random model of tests/conftest.py); with the default setup the server holds
the options of `inkling serve` with none; ghost text appears as an extmark while typing,
the next-draft key changes it, the accept key inserts it, and the server's inkling/stats
counts the acceptance. With the scripted server (tests/editors/editor_fake_server.py): cycling,
typing along (across a newline too), word and line acceptance, the chosen draft kept when
new answers come, text typed while the server starts, the trigger mode, buffer and file
type switches. Also: a missing or crashing server is reported once in a line that opens no
hit-enter prompt, shows a short error in the statusline and is restarted with backoff, and
typing goes on meanwhile; `:help inkling` with the documented install; and the plugin's
pure helpers. The issue-25 defects each have a test named after them (defect 2, 3, 4, 5, 6,
9 and 10).
"""
from __future__ import annotations

import dataclasses
import json
import os
import shutil
import sys
import time
from pathlib import Path

import pytest

NVIM = shutil.which("nvim")
# every test starts a headless Neovim (most of them a server beside it)
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(NVIM is None, reason="nvim is not installed")]
pynvim = pytest.importorskip("pynvim")

REPO = Path(__file__).resolve().parents[2]
PLUGIN = REPO / "editors" / "nvim"
SERVER = [sys.executable, "-m", "inkling.cli.main", "serve"]
# the options the issue asks for: several drafts from the "branches" decoder
DRAFT_OPTIONS = {"completion": {"decoder": "branches", "drafts": 3, "automaticDrafts": 1}}

SAMPLE = '''"""Small helpers."""
import os


def read_lines(path):
    with open(path) as handle:
        return handle.read().splitlines()


'''


def _lua_json(value) -> str:
    return "vim.json.decode([==[" + json.dumps(value) + "]==])"


def _write_init(tmp_path: Path, cmd: list[str], init_options: dict, extra: str = "") -> Path:
    init = tmp_path / "init.lua"
    options = f"init_options = {_lua_json(init_options)}," if init_options else ""
    init.write_text(f"""
vim.opt.runtimepath:prepend({json.dumps(str(PLUGIN))})
vim.o.swapfile = false
vim.o.expandtab = true
vim.o.shiftwidth = 4
vim.o.autoindent = true
require("inkling").setup({{
  cmd = {_lua_json(cmd)},
  {options}
  restart = {{ initial_ms = 200, factor = 2, max_ms = 1000 }},
  {extra}
}})
""")
    return init


def _start(init: Path, cwd: Path, env: dict | None = None):
    saved = dict(os.environ)
    os.environ.update(env or {})        # the child Neovim, and the server it starts, inherit it
    try:
        return pynvim.attach("child", argv=[NVIM, "--embed", "--headless", "--clean", "-n",
                                            "-u", str(init), "--cmd", f"cd {cwd}"])
    finally:
        os.environ.clear()
        os.environ.update(saved)


def _wait(predicate, timeout: float, step: float = 0.05):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(step)


def _lua(nvim, code: str, *args):
    return nvim.exec_lua(code, *args)


def _statusline(nvim) -> str:
    return _lua(nvim, "return require('inkling').statusline()")


def _ghost(nvim):
    return _lua(nvim, "return require('inkling').ghost_text()")


def _ghost_extmarks(nvim):
    """Extmarks with virtual text in the plugin's namespace (or the built-in one on 0.12+)."""
    spaces = nvim.api.get_namespaces()
    marks = []
    for name in ("inkling", "nvim.lsp.inline_completion"):
        if name in spaces:
            marks += [m for m in nvim.api.buf_get_extmarks(0, spaces[name], 0, -1,
                                                            {"details": True})
                      if m[3].get("virt_text") or m[3].get("virt_lines")]
    return marks


def _stats(nvim, timeout: float = 10.0) -> dict:
    _lua(nvim, "_G.__inkling_stats = nil; require('inkling').stats(function(err, result) "
               "_G.__inkling_stats = err and {error = err.message or tostring(err)} or result end)")
    stats = _wait(lambda: _lua(nvim, "return _G.__inkling_stats"), timeout)
    assert stats and "error" not in stats, stats
    return stats


def _messages(nvim) -> str:
    return nvim.command_output("messages")


def _close(nvim) -> None:
    try:
        if nvim.api.get_mode().get("blocking"):   # a prompt would hold the :qa! below
            nvim.input("<CR><Esc>")
            time.sleep(0.2)
        nvim.command("qa!")
    except Exception:
        pass
    try:
        nvim.close()
    except Exception:
        pass


@pytest.fixture(scope="module")
def model_options(request) -> dict:
    """The bundled model when it is in the checkout, else the tiny random-weight model."""
    from inkling.models import BUNDLED_MODEL_DIR
    if (BUNDLED_MODEL_DIR / "config.json").is_file():
        return {}
    tiny = request.getfixturevalue("tiny_model_dir")
    return {"model": {"path": str(tiny)}, "completion": {"maxNewTokens": 12}}


@pytest.fixture(scope="module")
def editor(tmp_path_factory, model_options):
    """Neovim with the plugin set up as the README says (no init_options with the bundled
    model), the server loaded and ready; its stats then (`nvim.default_stats`); then the
    drafts the tests cycle through (workspace/didChangeConfiguration, as a user would with
    require("inkling").configure)."""
    tmp = tmp_path_factory.mktemp("nvim")
    # The server applies an options tree as a whole, so a value it refuses would drop the
    # model path sent with it: the model first, then the drafts.
    nvim = _start(_write_init(tmp, SERVER, model_options), tmp)
    try:
        first = tmp / "sample.py"
        first.write_text(SAMPLE)
        nvim.command(f"edit {first}")
        status = _wait(lambda: (s := _statusline(nvim)) and ("ready" in s or "error" in s) and s,
                       60)
        assert status and "ready" in status, (status, _messages(nvim))
        nvim.default_stats = _stats(nvim)
        _lua(nvim, f"require('inkling').configure({_lua_json(DRAFT_OPTIONS)})")
        nvim.tmp = tmp
        yield nvim
    finally:
        _close(nvim)


def test_default_setup_runs_the_servers_defaults(editor, model_options):
    """With default settings the plugin sends no options: inkling/stats reports the options
    of `inkling serve` with none (the model path aside where the tiny model stands in)."""
    from inkling.completion.options import InklingOptions
    expected = dataclasses.asdict(InklingOptions().merged(model_options))
    assert editor.default_stats["options"] == expected
    assert editor.default_stats["cache_mode"] == "pie"


def _open(nvim, name: str) -> None:
    nvim.input("<Esc>")
    path = nvim.tmp / name
    if not path.exists():
        path.write_text(SAMPLE)
    nvim.command(f"edit {path}")
    _wait(lambda: _lua(nvim, "return vim.lsp.buf_is_attached(0, require('inkling.server')"
                             ".client_id or -1)"), 10)


def _answered_here(nvim) -> bool:
    """An answer for the cursor position arrived (with drafts or without)."""
    last = _lua(nvim, "return require('inkling').last_answer()")
    row, col = nvim.current.window.cursor
    return bool(last) and last["row"] == row - 1 and last["col"] == col


def _type_until_ghost(nvim, pieces, timeout: float = 15.0, good=lambda g: bool(g),
                      invoke: bool = False):
    """Type the pieces one after the other until ghost text shows; the ghost text or None.

    invoke: where the automatic answer shows nothing good, also ask with the next-draft key
    (an invoked request for several drafts), as a user would before typing on."""
    ghost = None
    for piece in pieces:
        nvim.input(piece)
        time.sleep(0.1)
        _wait(lambda: good(_ghost(nvim)) or _answered_here(nvim), timeout)
        ghost = _wait(lambda: _ghost(nvim), 0.3)
        if not good(ghost) and invoke:
            nvim.input("<M-]>")
            ghost = _wait(lambda: good(g := _ghost(nvim)) and g, timeout)
        if good(ghost):
            return ghost
    return ghost if good(ghost) else None


def test_ghost_text_cycle_accept_and_stats(editor):
    nvim = editor
    _open(nvim, "cycle.py")
    branches_refused = lambda: "not implemented yet" in _messages(nvim)  # noqa: E731

    # type a function; ghost text appears as an extmark at the cursor; the next-draft key
    # shows another draft (an invoked request asks for 3 drafts). Where the model has no
    # second draft (the branches decoder keeps distinct ones only), type on and ask again.
    nvim.input("G")
    pieces = ["odef count_words(text):<CR>", "words = text.split()<CR>", "return len(", "w",
              "ords)<CR>", "print(", "text.", "split(", ")<CR>", "for word in ", "words:<CR>"]
    ghost = changed = None
    while pieces and not changed:
        typed = 0
        for typed, piece in enumerate(pieces, 1):
            if (ghost := _type_until_ghost(nvim, [piece])):
                break
        pieces = pieces[typed:]
        if ghost:
            marks = _ghost_extmarks(nvim)
            assert marks, "ghost text is not an extmark"
            row = nvim.current.window.cursor[0] - 1
            assert marks[0][1] == row
            nvim.input("<M-]>")
            changed = _wait(lambda: (g := _ghost(nvim)) and g != ghost and g, 15)
    assert ghost, ("no ghost text", _statusline(nvim), _messages(nvim))
    if changed:    # and the previous-draft key brings the first one back
        nvim.input("<M-[>")
        assert _wait(lambda: _ghost(nvim) == ghost, 5), (_ghost(nvim), ghost)
        nvim.input("<M-]>")
        assert _wait(lambda: _ghost(nvim) == changed, 5), (_ghost(nvim), changed)
    shown = _ghost(nvim)
    assert shown, "cycling lost the ghost text"

    # accept inserts the draft on screen into the buffer
    before = "\n".join(nvim.current.buffer[:])
    line_before = nvim.current.line
    col = nvim.current.window.cursor[1]
    nvim.input("<Tab>")
    _wait(lambda: "\n".join(nvim.current.buffer[:]) != before, 5)
    first, *rest = shown.split("\n")
    assert nvim.current.buffer[row] == line_before[:col] + first + (
        "" if rest else line_before[col:]), (shown, nvim.current.buffer[:])
    assert shown in "\n".join(nvim.current.buffer[:])

    # and the server heard about it (workspace/executeCommand inkling.accept)
    stats = _wait(lambda: (s := _stats(nvim))["accepted"] >= 1 and s, 10) or _stats(nvim)
    assert stats["accepted"] >= 1, stats
    assert stats["answered"] >= 1 and stats["errors"] == 0, stats

    # This is the assertion that needs the "branches" decoder: with the greedy decoder the
    # server answers one draft, so there is no other draft to show.
    if not changed:
        if branches_refused():
            pytest.xfail("the next-draft key cannot change the ghost text yet: the server "
                         "refuses decoder 'branches' (not implemented yet) and gives 1 draft")
        pytest.fail("the next-draft key did not change the ghost text")


def test_typing_along_dismiss_and_partial_accept(editor):
    """Typing along the ghost text keeps the rest; dismiss clears it; accept a word."""
    nvim = editor
    _open(nvim, "keys.py")
    nvim.input("Goif __name__ == ")
    long_enough = lambda g: bool(g) and len(g.strip()) >= 2  # noqa: E731
    # what the bundled model suggests at a position depends on what the server learnt in the
    # session before (the earlier tests' typing): several positions, each also invoked
    ghost = _type_until_ghost(nvim, ['"__main__":<CR>', "print(", "read_lines(os.", "path",
                                     ")<CR>", "for line in ", "read_lines(", "__file__):<CR>"],
                              good=long_enough, invoke=True)
    if not ghost:
        pytest.skip(f"the model suggested too little to test typing along: {_ghost(nvim)!r}")
    # dismiss clears it, and it stays cleared until the next keystroke
    nvim.input("<C-]>")
    assert _wait(lambda: not _ghost(nvim) and not _ghost_extmarks(nvim), 3)
    time.sleep(0.5)
    assert not _ghost_extmarks(nvim)
    # next-draft with nothing on screen asks for a suggestion (invoked)
    nvim.input("<M-]>")
    ghost = _wait(lambda: long_enough(_ghost(nvim)) and _ghost(nvim), 15)
    if not ghost:
        pytest.skip(f"the model suggested too little to test typing along: {_ghost(nvim)!r}")
    # typing its first character keeps the rest on screen at once
    lead = len(ghost) - len(ghost.lstrip(" "))
    typed = ghost[: lead + 1]
    nvim.input(typed.replace("<", "<lt>"))
    rest = _wait(lambda: _ghost(nvim), 2)
    assert rest and ghost[len(typed):].startswith(rest[:1]), (ghost, typed, rest)
    # accept a word: the buffer grows by the next word of the ghost text only
    row = nvim.current.window.cursor[0] - 1
    lines = nvim.current.buffer[:]
    col = nvim.current.window.cursor[1]
    word = _lua(nvim, "return require('inkling.util').next_word(...)", rest)
    nvim.input("<M-Right>")
    assert _wait(lambda: nvim.current.buffer[:] != lines, 3)
    line = lines[row]
    expected = (line[:col] + word + line[col:]).split("\n")
    assert nvim.current.buffer[row:row + len(expected)] == expected, (word, nvim.current.buffer[:])
    # the rest of the draft stays on screen
    remaining = rest[len(word):]
    if remaining.strip():
        assert _wait(lambda: (_ghost(nvim) or "").startswith(remaining[:1]), 3), (
            rest, word, _ghost(nvim))


FAKE_SERVER = [sys.executable, str(Path(__file__).with_name("editor_fake_server.py"))]


def _scripted(tmp_path, env=None, extra=""):
    nvim = _start(_write_init(tmp_path, FAKE_SERVER, {}, extra), tmp_path, env)
    sample = tmp_path / "add.py"
    sample.write_text("def add(a, b):\n")
    nvim.command(f"edit {sample}")
    return nvim


@pytest.fixture()
def scripted(tmp_path):
    """Neovim with the plugin on the scripted server (tests/editors/editor_fake_server.py)."""
    nvim = _scripted(tmp_path)
    try:
        assert _wait(lambda: "ready" in _statusline(nvim), 20), _messages(nvim)
        yield nvim
    finally:
        _close(nvim)


def test_scripted_cycling_through_three_drafts(scripted):
    nvim = scripted
    nvim.input("Goreturn ")
    assert _wait(lambda: _ghost(nvim) == "a + b", 5), _ghost(nvim)
    mark = _ghost_extmarks(nvim)[0]
    assert mark[1:3] == [1, 11] and mark[3]["virt_text"][0][0] == "a + b"
    assert mark[3]["virt_text"][0][1] == "InklingGhost"
    nvim.input("<M-]>")                       # one draft shown: an invoked request for three
    assert _wait(lambda: _ghost(nvim) == "b + a", 5), _ghost(nvim)
    assert _statusline(nvim).endswith("[2/3]")
    nvim.input("<M-]>")
    assert _wait(lambda: _ghost(nvim) == "sum((a, b))", 5), _ghost(nvim)
    nvim.input("<M-]>")                       # wraps around
    assert _wait(lambda: _ghost(nvim) == "a + b", 5), _ghost(nvim)
    nvim.input("<M-[>")
    assert _wait(lambda: _ghost(nvim) == "sum((a, b))", 5), _ghost(nvim)
    nvim.input("<Tab>")
    assert _wait(lambda: nvim.current.buffer[1] == "    return sum((a, b))", 5), \
        nvim.current.buffer[:]
    stats = _wait(lambda: (s := _stats(nvim))["accepted"] == 1 and s, 5)
    assert stats and stats["accepted_texts"] == ["sum((a, b))"], stats


def test_scripted_typing_along_words_and_dismiss(scripted):
    nvim = scripted
    nvim.input("Goreturn ")
    assert _wait(lambda: _ghost(nvim) == "a + b", 5)
    nvim.input("a")                           # typing along keeps the rest on screen
    assert _wait(lambda: _ghost(nvim) == " + b", 2), _ghost(nvim)
    nvim.input("<M-Right>")                   # accept a word
    assert _wait(lambda: nvim.current.buffer[1] == "    return a +", 3), nvim.current.buffer[:]
    assert _wait(lambda: _ghost(nvim) == " b", 2), _ghost(nvim)
    assert _stats(nvim)["accepted"] == 0      # not all of it yet
    nvim.input("<M-Right>")                   # the last word: the whole draft was taken
    assert _wait(lambda: nvim.current.buffer[1] == "    return a + b", 3), nvim.current.buffer[:]
    assert _wait(lambda: _stats(nvim)["accepted"] == 1, 5)
    nvim.input("<CR>return ")                 # (the indent script dedents after a return)
    assert _wait(lambda: _ghost(nvim) == "a + b", 5)
    nvim.input("<C-]>")
    assert _wait(lambda: _ghost(nvim) is None and not _ghost_extmarks(nvim), 2)
    nvim.input("<C-]>")                       # nothing shown: the key is itself again
    nvim.input("x")
    assert _wait(lambda: nvim.current.buffer[2] == "return x", 3), nvim.current.buffer[:]


def test_scripted_multi_line_draft_and_line_accept(scripted):
    nvim = scripted
    nvim.input("Go<Space><BS>")               # an indented blank line in the function
    assert _wait(lambda: _ghost(nvim) == "total = a + b\n    return total", 5), _ghost(nvim)
    mark = _ghost_extmarks(nvim)[0]
    assert mark[3]["virt_text"][0][0] == "total = a + b"
    assert [c[0] for c in mark[3]["virt_lines"][0]] == ["    return total"]
    nvim.input("<M-Down>")                    # accept the line
    assert _wait(lambda: nvim.current.buffer[1] == "    total = a + b", 3), nvim.current.buffer[:]
    assert _wait(lambda: _ghost(nvim) == "\n    return total", 2), _ghost(nvim)
    nvim.input("<M-Down>")                    # the newline and the next line: all of it
    assert _wait(lambda: nvim.current.buffer[1:3] == ["    total = a + b", "    return total"],
                 3), nvim.current.buffer[:]
    assert tuple(nvim.current.window.cursor) == (3, 16)
    stats = _wait(lambda: (s := _stats(nvim))["accepted"] == 1 and s, 5)
    assert stats and stats["accepted_texts"] == ["total = a + b\n    return total"], stats


def test_defect_4_the_chosen_draft_stays_when_a_new_answer_comes(scripted):
    """Cycle to draft 2, accept a word of it: the next automatic answer (another draft)
    joins after it instead of replacing it with its own draft 1."""
    nvim = scripted
    nvim.input("Goreturn ")
    assert _wait(lambda: _ghost(nvim) == "a + b", 5), _ghost(nvim)
    nvim.input("<M-]>")
    assert _wait(lambda: _ghost(nvim) == "b + a", 5), _ghost(nvim)
    nvim.input("<M-Right>")                   # accept the word "b"
    assert _wait(lambda: nvim.current.buffer[1] == "    return b", 3), nvim.current.buffer[:]
    assert _wait(lambda: _ghost(nvim) == " + a", 2), _ghost(nvim)
    # the automatic request after the accepted word answers ["(a, b)"]
    assert _wait(lambda: _answered_here(nvim), 5)
    time.sleep(0.3)
    assert _ghost(nvim) == " + a", _ghost(nvim)
    assert _statusline(nvim).endswith("[1/2]"), _statusline(nvim)
    nvim.input("<M-]>")                       # the new answer is the next draft
    assert _wait(lambda: _ghost(nvim) == "(a, b)", 3), _ghost(nvim)
    nvim.input("<M-[><Tab>")
    assert _wait(lambda: nvim.current.buffer[1] == "    return b + a", 3), nvim.current.buffer[:]
    stats = _wait(lambda: (s := _stats(nvim))["accepted"] == 1 and s, 5)
    assert stats and stats["accepted_texts"] == ["b + a"], stats


def test_defect_10_a_newline_in_the_ghost_text_keeps_the_rest_on_screen(scripted):
    """Typing the first line of a two-line draft and Enter (auto-indent) leaves the second
    line on screen at once, and it stays when the next answer comes."""
    nvim = scripted
    nvim.input("Go<Space><BS>")
    assert _wait(lambda: _ghost(nvim) == "total = a + b\n    return total", 5), _ghost(nvim)
    nvim.input("total = a + b<CR>")
    assert _wait(lambda: nvim.current.buffer[2] == "    ", 3), nvim.current.buffer[:]
    assert _ghost(nvim) == "return total", _ghost(nvim)
    assert _wait(lambda: _answered_here(nvim), 5)
    time.sleep(0.2)
    assert _ghost(nvim) == "return total", _ghost(nvim)
    nvim.input("<Tab>")
    assert _wait(lambda: nvim.current.buffer[1:3] == ["    total = a + b", "    return total"],
                 3), nvim.current.buffer[:]
    stats = _wait(lambda: (s := _stats(nvim))["accepted"] == 1 and s, 5)
    assert stats and stats["accepted_texts"] == ["total = a + b\n    return total"], stats


def test_defect_6_text_typed_while_the_server_starts_gets_its_suggestion(tmp_path):
    """The server answers initialize after 2 s (a model loading): typing before that gets
    its ghost text once the server is up, with no further keystroke."""
    nvim = _scripted(tmp_path, {"INKLING_FAKE_INIT_DELAY": "2"})
    try:
        nvim.input("Goreturn ")
        time.sleep(0.5)
        assert "ready" not in _statusline(nvim), _statusline(nvim)      # still starting
        assert _wait(lambda: _ghost(nvim) == "a + b", 15), (_ghost(nvim), _statusline(nvim))
        assert nvim.current.buffer[:] == ["def add(a, b):", "    return "]
    finally:
        _close(nvim)


def test_default_setup_sends_no_options(scripted):
    """Only what the user set is sent as initializationOptions: here nothing."""
    assert _stats(scripted).get("initializationOptions") in (None, {})   # null: no key


def test_manual_trigger_mode_and_the_trigger_key(scripted):
    """auto_trigger off: typing asks nothing; <M-\\> asks (invoked: three drafts);
    typing along it keeps it; the toggle brings automatic suggestions back."""
    nvim = scripted
    nvim.command("InklingToggleAutoTrigger")
    assert _statusline(nvim).endswith("(manual)"), _statusline(nvim)
    requests = _stats(nvim)["requests"]
    nvim.input("Goreturn ")
    time.sleep(0.6)
    assert _ghost(nvim) is None and _stats(nvim)["requests"] == requests
    nvim.input("<M-\\>")
    assert _wait(lambda: _ghost(nvim) == "a + b", 5), _ghost(nvim)
    assert _statusline(nvim).endswith("[1/3]")
    nvim.input("a")
    assert _wait(lambda: _ghost(nvim) == " + b", 2), _ghost(nvim)
    time.sleep(0.4)
    assert _stats(nvim)["requests"] == requests + 1
    nvim.input("<Esc>")
    nvim.command("InklingToggleAutoTrigger")
    nvim.input("o<C-u>    return ")
    assert _wait(lambda: _ghost(nvim) == "a + b", 5), _ghost(nvim)


def test_buffer_and_filetype_switches(scripted):
    """b:inkling_enabled and g:inkling_filetypes (copilot.vim's), and their commands."""
    nvim = scripted
    nvim.command("InklingToggleBuffer")
    assert nvim.current.buffer.vars["inkling_enabled"] is False
    assert _statusline(nvim) == "inkling: off for this buffer"
    nvim.input("Goreturn ")
    time.sleep(0.6)
    assert _ghost(nvim) is None
    nvim.input("<Esc>")
    nvim.command("InklingToggleBuffer")
    nvim.command("InklingToggleFiletype")
    assert nvim.vars["inkling_filetypes"] == {"python": False}
    assert _statusline(nvim) == "inkling: off for python"
    nvim.input("A<BS> ")
    time.sleep(0.6)
    assert _ghost(nvim) is None
    nvim.input("<Esc>")
    nvim.command("let g:inkling_filetypes = {'*': v:false, 'python': v:true}")
    nvim.input("A<BS> ")
    assert _wait(lambda: _ghost(nvim) == "a + b", 5), _ghost(nvim)


def test_defect_9_ghost_text_is_not_comment_and_statusline_only_where_attached(scripted):
    nvim = scripted
    ghost = nvim.api.get_hl_by_name("InklingGhost", True)
    comment = nvim.api.get_hl_by_name("Comment", True)
    assert ghost != comment and ghost.get("italic"), (ghost, comment)
    nvim.command("colorscheme default")              # survives a colour scheme
    assert nvim.api.get_hl_by_name("InklingGhost", True) == ghost
    assert _statusline(nvim).startswith("inkling: ready")
    notes = nvim.tmp_notes = Path(nvim.command_output("pwd").strip()) / "notes.txt"
    notes.write_text("plain text\n")
    nvim.command(f"edit {notes}")
    assert _statusline(nvim) == ""


def test_defect_5_help_works_with_the_documented_install(tmp_path):
    """`:help inkling` with the plugin on the runtime path (the README's install): the tags
    ship in doc/tags, and they are what :helptags makes of the doc."""
    init = tmp_path / "init.lua"
    init.write_text(f"vim.opt.runtimepath:append({json.dumps(str(PLUGIN))})\n")
    nvim = _start(init, tmp_path)
    try:
        nvim.command("help inkling")
        assert nvim.current.buffer.name.endswith("inkling.txt")
        nvim.command("help inkling-keys")
        assert "KEYS" in nvim.current.line
        nvim.command("help inkling-options")
        assert "SERVER OPTIONS" in nvim.current.line
        nvim.command("help b:inkling_enabled")
        copy = tmp_path / "doc"
        shutil.copytree(PLUGIN / "doc", copy)
        (copy / "tags").unlink()
        nvim.command(f"helptags {copy}")
        assert (copy / "tags").read_text() == (PLUGIN / "doc" / "tags").read_text(), \
            "doc/tags is stale: run nvim --headless -c 'helptags editors/nvim/doc' -c q"
    finally:
        _close(nvim)


def test_missing_server_is_reported_once_and_typing_goes_on(tmp_path):
    sample = tmp_path / "m.py"
    sample.write_text("x = 1\n")
    nvim = _start(_write_init(tmp_path, [str(tmp_path / "no-such-inkling"), "serve"], {}),
                  tmp_path)
    try:
        nvim.command(f"edit {sample}")
        nvim.input("Goy = 2")
        assert _wait(lambda: nvim.current.buffer[:] == ["x = 1", "y = 2"], 5)
        # retries with backoff: 200, 400, 800, 1000 ms ...
        assert _wait(lambda: _lua(nvim, "return require('inkling.server').failures") >= 3, 6)
        assert "error" in _statusline(nvim)
        messages = _messages(nvim)
        assert messages.count("not found: no-such-inkling") == 1, messages
        nvim.input("<Tab>z")            # keys fall back to their own meaning
        assert _wait(lambda: nvim.current.buffer[1] == "y = 2\tz"
                     or nvim.current.buffer[1].startswith("y = 2 ") and
                     nvim.current.buffer[1].endswith("z"), 3), nvim.current.buffer[:]
    finally:
        _close(nvim)


def _attach_screen(nvim, columns: int = 80) -> None:
    """A screen, as a user has: messages then take room, and a long one prompts."""
    nvim.ui_attach(columns, 24, rgb=True)


def test_defect_2_failure_message_opens_no_prompt_and_restarts_go_on(tmp_path):
    """On an 80-column screen the missing-server message used to open the hit-enter prompt,
    which held the announced restart until Enter; now it is one line that fits, and the
    restarts go on by themselves."""
    sample = tmp_path / "m.py"
    sample.write_text("x = 1\n")
    command = tmp_path / "a-long-folder-name-for-the-server" / "no-such-inkling-server"
    nvim = _start(_write_init(tmp_path, [str(command), "serve"], {}), tmp_path)
    try:
        _attach_screen(nvim)
        nvim.command(f"edit {sample}")
        deadline = time.monotonic() + 4
        while time.monotonic() < deadline:       # nvim_get_mode answers even at a prompt
            mode = nvim.api.get_mode()
            assert not mode["blocking"] and mode["mode"] != "r", mode
            time.sleep(0.1)
        assert _lua(nvim, "return require('inkling.server').failures") >= 3
        line = [m for m in _messages(nvim).splitlines() if "no-such-inkling-server" in m]
        assert len(line) == 1 and len(line[0]) < 80 - 12, line
    finally:
        _close(nvim)


def test_defect_3_statusline_error_is_short_and_says_what(tmp_path):
    """The statusline's error: one "inkling:" and the culprit's name, not a cut-off path;
    :InklingStatus says it all."""
    sample = tmp_path / "m.py"
    sample.write_text("x = 1\n")
    command = tmp_path / "no-such-inkling"
    nvim = _start(_write_init(tmp_path, [str(command), "serve"], {}), tmp_path)
    try:
        nvim.command(f"edit {sample}")
        assert _wait(lambda: "error" in _statusline(nvim), 5)
        status = _statusline(nvim)
        assert status == "inkling: error (not found: no-such-inkling)", status
        full = nvim.command_output("InklingStatus")
        assert str(command) in full and "is not an executable" in full, full
    finally:
        _close(nvim)


def test_crashing_server_is_restarted_with_backoff_and_reported_once(tmp_path):
    crash = [sys.executable, "-c", "import sys; sys.stdin.read(1); sys.exit(3)"]
    sample = tmp_path / "c.py"
    sample.write_text("x = 1\n")
    nvim = _start(_write_init(tmp_path, crash, {}), tmp_path)
    try:
        nvim.command(f"edit {sample}")
        nvim.input("Goy = 2")
        assert _wait(lambda: _lua(nvim, "return require('inkling.server').failures") >= 3, 8)
        delays = _lua(nvim, "return require('inkling.util').backoff_ms(3, "
                            "require('inkling.server').cfg.restart)")
        assert delays == 800
        assert "error" in _statusline(nvim)
        messages = _messages(nvim)
        assert messages.count("exited, code 3") == 1, messages
        assert "quit with exit code" not in messages, messages
        assert nvim.current.buffer[:] == ["x = 1", "y = 2"]
        # :InklingRestart starts afresh (and may say so once more)
        nvim.input("<Esc>")
        nvim.command("InklingRestart")
        assert _wait(lambda: _lua(nvim, "return require('inkling.server').failures") >= 1, 5)
    finally:
        _close(nvim)


def test_pure_helpers(tmp_path):
    """editors/nvim/lua/inkling/util.lua, run inside Neovim."""
    nvim = _start(_write_init(tmp_path, [str(tmp_path / "absent")], {},
                              "filetypes = {}"), tmp_path)
    try:
        u = "require('inkling.util')"
        assert _lua(nvim, f"return {u}.utf16_col(...)", "aé😀b", 1 + 2 + 4) == 4
        assert _lua(nvim, f"return {u}.byte_col(...)", "aé😀b", 4) == 7
        assert _lua(nvim, f"return {u}.utf16_col(...)", "abc", 10) == 3
        assert _lua(nvim, f"return {u}.next_word(...)", "  foo(bar)") == "  foo"
        assert _lua(nvim, f"return {u}.next_word(...)", "(bar)") == "("
        assert _lua(nvim, f"return {u}.next_word(...)", "\n    x") == "\n    "
        assert _lua(nvim, f"return {u}.next_line(...)", "a + b\nc") == "a + b"
        assert _lua(nvim, f"return {u}.next_line(...)", "\n    c\nd") == "\n    c"
        assert _lua(nvim, f"return {u}.split_lines(...)", "a\n") == ["a", ""]
        backoff = [_lua(nvim, f"return {u}.backoff_ms(...)", n,
                        {"initial_ms": 1000, "factor": 2, "max_ms": 5000}) for n in range(1, 6)]
        assert backoff == [1000, 2000, 4000, 5000, 5000]
        assert _lua(nvim, f"return {u}.remaining(...)", "total = a\n    x", "total = a\n    ") \
            == "x"
        assert _lua(nvim, f"return {u}.remaining(...)", "total = a\n    x", "total = a\n  ") \
            == "  x"
        assert _lua(nvim, f"return {u}.remaining(...)", "total = a\n  x", "total = a\n    ") \
            == "x"
        assert _lua(nvim, f"return {u}.remaining(...)", "ab", "ab") is None
        assert _lua(nvim, f"return {u}.remaining(...)", "ab", "ac") is None
        fmt = f"return {u}.format_status(...)"
        assert _lua(nvim, fmt, None) == "inkling: starting"
        assert _lua(nvim, fmt, {"state": "loading", "progress": 40}) == "inkling: loading 40%"
        assert _lua(nvim, fmt, {"state": "ready", "latencyMs": 41.6}) == "inkling: ready 42ms"
        assert _lua(nvim, fmt, {"state": "busy"}) == "inkling: busy"
        assert _lua(nvim, fmt, {"state": "error", "message": "boom"}) == "inkling: error (boom)"
        assert _lua(nvim, fmt, {"state": "error", "message": "inkling: boom"}) == \
            "inkling: error (boom)"
        assert _lua(nvim, fmt, {"state": "off", "message": "off for lua"}) == "inkling: off for lua"
        lines = _lua(nvim, f"return {u}.format_stats(...)",
                     {"requests": 3, "accepted": 1, "latency_ms": {"p50": 9.25, "p95": 20,
                                                                    "count": 3}})
        assert any("accepted    1" in line for line in lines)
        assert any("p50 9.2" in line or "p50 9.3" in line for line in lines)
        merged = _lua(nvim, f"return {u}.merge(...)", {"a": {"b": 1, "c": 2}, "l": [1, 2]},
                      {"a": {"c": 3}, "l": [9]})
        assert merged == {"a": {"b": 1, "c": 3}, "l": [9]}
    finally:
        _close(nvim)
