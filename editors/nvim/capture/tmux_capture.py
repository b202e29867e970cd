"""Capture ghost text in a real Neovim running in tmux: a text file and a PNG.

    .venv/bin/python editors/nvim/capture/tmux_capture.py [--model PATH] [--out DIR]

Starts `nvim --clean` in a detached tmux session with the plugin set up (the server is
this checkout's Python running `inkling serve`, the bundled model unless --model), opens a
sample file, types the start of a function, waits for ghost text, presses the next-draft
key, and captures the pane after each step with `tmux capture-pane -e` (colours kept).
Writes ghost-text.txt (plain text, the ghost text marked in the README) and
ghost-text.png (the capture drawn with its colours) into --out (default: this folder).
"""
from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
PLUGIN = HERE.parent
SESSION = "inkling-capture"
SAMPLE = '''import os


def read_lines(path):
    """The lines of a text file, without line ends."""
    with open(path) as handle:
        return handle.read().splitlines()


'''


def tmux(*args: str, check: bool = True) -> str:
    return subprocess.run(["tmux", *args], check=check, capture_output=True, text=True).stdout


def capture() -> str:
    return tmux("capture-pane", "-p", "-e", "-t", SESSION)


def plain(ansi: str) -> str:
    return re.sub(r"\x1b\[[0-9;:]*[A-Za-z]", "", ansi)


def wait_for(predicate, timeout: float, step: float = 0.2):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(step)
    return None


def write_init(tmp: Path, model: str | None) -> Path:
    options = {"completion": {"decoder": "branches", "drafts": 3, "automaticDrafts": 1}}
    if model:
        options["model"] = {"path": model}
    state = tmp / "ghost.json"
    init = tmp / "init.lua"
    init.write_text(f"""
vim.opt.runtimepath:prepend({json.dumps(str(PLUGIN))})
vim.o.swapfile = false
vim.o.expandtab = true
vim.o.shiftwidth = 4
vim.o.autoindent = true
vim.o.termguicolors = true
vim.o.number = true
vim.o.laststatus = 2
vim.cmd("syntax on")
vim.o.statusline = " %f %= %{{v:lua.require'inkling'.statusline()}} "
require("inkling").setup({{
  cmd = vim.json.decode([==[{json.dumps([sys.executable, "-m", "inkling.cli.main", "serve"])}]==]),
  init_options = vim.json.decode([==[{json.dumps(options)}]==]),
}})
-- for the capture script: the ghost text on screen, written on every change
local last
local timer = (vim.uv or vim.loop).new_timer()
timer:start(100, 100, vim.schedule_wrap(function()
  local g = require("inkling").ghost_text() or ""
  if g ~= last then
    last = g
    local f = io.open({json.dumps(str(state))}, "w")
    f:write(vim.json.encode({{ ghost = g, status = require("inkling").statusline() }}))
    f:close()
  end
end))
""")
    return init


def ghost_state(tmp: Path) -> dict:
    try:
        return json.loads((tmp / "ghost.json").read_text())
    except (OSError, ValueError):
        return {}


# ---------------------------------------------------------------------------- PNG
PALETTE = ["#1d1f21", "#cc6666", "#b5bd68", "#f0c674", "#81a2be", "#b294bb", "#8abeb7",
           "#c5c8c6", "#666666", "#d54e53", "#b9ca4a", "#e7c547", "#7aa6da", "#c397d8",
           "#70c0b1", "#eaeaea"]


def _xterm(n: int) -> str:
    if n < 16:
        return PALETTE[n]
    if n < 232:
        n -= 16
        steps = [0, 95, 135, 175, 215, 255]
        return "#%02x%02x%02x" % (steps[n // 36], steps[(n // 6) % 6], steps[n % 6])
    v = 8 + (n - 232) * 10
    return "#%02x%02x%02x" % (v, v, v)


def ansi_cells(ansi: str, fg0: str, bg0: str):
    """Rows of (char, fg, bg, bold, italic) from SGR-coloured text."""
    rows = []
    for line in ansi.split("\n"):
        fg, bg, bold, italic = fg0, bg0, False, False
        cells = []
        for part in re.split(r"(\x1b\[[0-9;:]*m)", line):
            m = re.fullmatch(r"\x1b\[([0-9;:]*)m", part)
            if not m:
                cells += [(ch, fg, bg, bold, italic) for ch in part]
                continue
            codes = [int(c) if c.isdigit() else 0 for c in re.split("[;:]", m.group(1) or "0")]
            i = 0
            while i < len(codes):
                c = codes[i]
                if c == 0:
                    fg, bg, bold, italic = fg0, bg0, False, False
                elif c == 1:
                    bold = True
                elif c == 3:
                    italic = True
                elif c == 22:
                    bold = False
                elif c == 23:
                    italic = False
                elif 30 <= c <= 37 or 90 <= c <= 97:
                    fg = PALETTE[c - 30 if c < 90 else c - 90 + 8]
                elif 40 <= c <= 47 or 100 <= c <= 107:
                    bg = PALETTE[c - 40 if c < 100 else c - 100 + 8]
                elif c == 39:
                    fg = fg0
                elif c == 49:
                    bg = bg0
                elif c in (38, 48) and i + 1 < len(codes):
                    if codes[i + 1] == 2 and i + 4 < len(codes):
                        color = "#%02x%02x%02x" % tuple(codes[i + 2:i + 5])
                        i += 4
                    elif codes[i + 1] == 5 and i + 2 < len(codes):
                        color = _xterm(codes[i + 2])
                        i += 2
                    else:
                        color = fg0 if c == 38 else bg0
                    if c == 38:
                        fg = color
                    else:
                        bg = color
                    i += 1
                i += 1
        rows.append(cells)
    return rows


def render_png(ansi: str, out: Path, title: str) -> None:
    from PIL import Image, ImageDraw, ImageFont
    fonts = Path("/usr/share/fonts/truetype/dejavu")
    size = 15
    regular = ImageFont.truetype(str(fonts / "DejaVuSansMono.ttf"), size)
    bold = ImageFont.truetype(str(fonts / "DejaVuSansMono-Bold.ttf"), size)
    oblique = ImageFont.truetype(str(fonts / "DejaVuSansMono-Oblique.ttf"), size)
    fg0, bg0 = "#c5c8c6", "#1d1f21"
    rows = ansi_cells(ansi.rstrip("\n"), fg0, bg0)
    cw = round(regular.getlength("M"))
    ch = size + 5
    cols = max(len(r) for r in rows)
    pad, bar = 12, 28
    img = Image.new("RGB", (cols * cw + 2 * pad, len(rows) * ch + 2 * pad + bar), bg0)
    draw = ImageDraw.Draw(img)
    draw.rectangle([0, 0, img.width, bar], fill="#2b2d30")
    for i, color in enumerate(("#ff5f56", "#ffbd2e", "#27c93f")):
        draw.ellipse([10 + i * 20, 8, 22 + i * 20, 20], fill=color)
    draw.text((80, 6), title, fill="#9da5b4", font=regular)
    for y, row in enumerate(rows):
        for x, (c, fg, bg, is_bold, is_italic) in enumerate(row):
            px, py = pad + x * cw, bar + pad + y * ch
            if bg != bg0:
                draw.rectangle([px, py, px + cw, py + ch], fill=bg)
            if c != " ":
                font = bold if is_bold else oblique if is_italic else regular
                draw.text((px, py + 2), c, fill=fg, font=font)
    img.save(out)


# ---------------------------------------------------------------------------- main
def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", help="a model folder (default: the bundled model)")
    p.add_argument("--out", default=str(HERE), help="where to write the captures")
    p.add_argument("--timeout", type=float, default=60)
    args = p.parse_args()
    if not shutil.which("tmux") or not shutil.which("nvim"):
        print("tmux and nvim are needed", file=sys.stderr)
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        sample = tmp / "lines.py"
        sample.write_text(SAMPLE)
        init = write_init(tmp, args.model)
        tmux("kill-session", "-t", SESSION, check=False)
        tmux("new-session", "-d", "-s", SESSION, "-x", "88", "-y", "20", "-c", str(tmp),
             f"env TERM=xterm-256color nvim --clean -n -u {init} {sample.name}")
        try:
            if not wait_for(lambda: "ready" in ghost_state(tmp).get("status", "")
                            or "ready" in plain(capture()), args.timeout):
                print("the server did not get ready:\n" + plain(capture()), file=sys.stderr)
                return 1
            tmux("send-keys", "-t", SESSION, "G", "o")
            # Neovim indents after ":" itself (the python indent script)
            for piece in ("def exists(path):", "Enter", "return os."):
                if piece == "Enter":
                    tmux("send-keys", "-t", SESSION, "Enter")
                else:
                    tmux("send-keys", "-t", SESSION, "-l", piece)
                time.sleep(0.15)
            first = wait_for(lambda: ghost_state(tmp).get("ghost"), args.timeout)
            time.sleep(0.5)
            shots = [("ghost text as you type", capture())]
            if first:
                tmux("send-keys", "-t", SESSION, "M-]")
                wait_for(lambda: ghost_state(tmp).get("ghost") not in (None, "", first), 20)
                time.sleep(0.5)
                shots.append(("after <M-]> (next draft)", capture()))
        finally:
            tmux("kill-session", "-t", SESSION, check=False)
    text = []
    for title, shot in shots:
        text.append(f"--- {title} ---")
        text.append(plain(shot).rstrip("\n"))
    (out / "ghost-text.txt").write_text("\n".join(text) + "\n")
    render_png(shots[0][1], out / "ghost-text.png", "nvim (Debian 0.7.2) - inkling ghost text")
    if len(shots) > 1:
        render_png(shots[1][1], out / "ghost-text-next.png", "nvim - after <M-]>: the next draft")
    print("\n".join(text))
    return 0


if __name__ == "__main__":
    sys.exit(main())
