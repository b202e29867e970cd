"""Assembles the frames drive.js took into the animated capture (an animated GIF).

    python frames_gif.py FRAMES_JSON OUT_GIF

FRAMES_JSON is drive.js's frames.json: {"frames": [{"file", "ms", "caption"}]}, each file a
PNG beside it, all of one size; each frame is shown for its ms, with its caption (the key
just pressed, or nothing) in a strip under it. Needs Pillow (the `report` extra's matplotlib
brings it).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

CAPTION_PX = 30           # the strip's height
FONT_PX = 17
COLORS = 128              # enough for the light theme's text and its ghost text to stay crisp


def captioned(png: Path, caption: str) -> Image.Image:
    """The frame with a caption strip under it (blank when there is no caption)."""
    shot = Image.open(png).convert("RGB")
    out = Image.new("RGB", (shot.width, shot.height + CAPTION_PX), (36, 41, 46))
    out.paste(shot, (0, 0))
    if caption:
        font = ImageFont.load_default(FONT_PX)
        ImageDraw.Draw(out).text((12, shot.height + (CAPTION_PX - FONT_PX) // 2 - 1), caption,
                                 fill=(255, 255, 255), font=font)
    return out


def montage(images: list[Image.Image]) -> Image.Image:
    """The images one under another: one palette for the colors of them all."""
    out = Image.new("RGB", (images[0].width, sum(im.height for im in images)))
    for i, im in enumerate(images):
        out.paste(im, (0, i * images[0].height))
    return out


def assemble(frames_json: Path, out_gif: Path) -> int:
    """Writes the GIF; returns its number of frames."""
    frames = json.loads(frames_json.read_text())["frames"]
    if not frames:
        raise ValueError(f"{frames_json}: no frames")
    images = [captioned(frames_json.parent / f["file"], f["caption"]) for f in frames]
    sizes = {im.size for im in images}
    if len(sizes) != 1:
        raise ValueError(f"{frames_json}: frames of different sizes {sorted(sizes)}")
    palette = montage([images[0]] + [im for im, f in zip(images, frames) if f["caption"]]) \
        .quantize(COLORS, method=Image.Quantize.MEDIANCUT)
    paletted = [im.quantize(palette=palette, dither=Image.Dither.NONE) for im in images]
    paletted[0].save(out_gif, save_all=True, append_images=paletted[1:], loop=0,
                     duration=[int(f["ms"]) for f in frames], optimize=True)
    return len(paletted)


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    count = assemble(Path(argv[0]), Path(argv[1]))
    print(f"{argv[1]}: {count} frames, {Path(argv[1]).stat().st_size} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
