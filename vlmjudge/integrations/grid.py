"""Captioned image grids of scored samples, for loggers that take images.

A caption says what a reader of a training dashboard needs at a glance: the prompt, the
method's score text and its top finding, all taken from `MethodSpec.render`; where the
render gives an image (a defect overlay) that image is shown instead of the sample.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from PIL import Image, ImageDraw, ImageFont

from vlmjudge.images import to_pil_list
from vlmjudge.registry import MethodSpec, ScoreRecord

_MARKUP = re.compile(r"[*_`]")


def top_finding(markdown: str) -> str:
    """The first list item of a render's markdown (TerraVis lists violations this way), plain text."""
    for line in markdown.splitlines():
        stripped = line.strip()
        if stripped.startswith(("- ", "* ")):
            return _MARKUP.sub("", stripped[2:]).strip()
    return ""


def captions_and_images(spec: MethodSpec, records: Sequence[ScoreRecord], images: Sequence[Any],
                        prompts: Sequence[str] | None) -> tuple[list[str], list[Image.Image]]:
    """One caption and one picture per record, from the method's own `render`."""
    pictures = to_pil_list(list(images))
    captions, shown = [], []
    for i, (record, picture) in enumerate(zip(records, pictures)):
        view = spec.render(record)
        lines = [f"{spec.name}: {view['score_text']}"]
        if prompts is not None:
            lines.insert(0, str(prompts[i]))
        finding = top_finding(view.get("markdown", ""))
        if finding:
            lines.append(finding)
        captions.append("\n".join(lines))
        overlay = view.get("image")
        shown.append(to_pil_list([overlay])[0] if overlay is not None else picture)
    return captions, shown


def caption_grid(images: Sequence[Image.Image], captions: Sequence[str], cell: int = 192,
                 columns: int = 4, chars_per_line: int = 30, lines_per_caption: int = 4) -> Image.Image:
    """Tile images (fit into `cell` squares) in rows with their wrapped captions below each."""
    if len(images) != len(captions):
        raise ValueError(f"{len(images)} images but {len(captions)} captions")
    if not images:
        raise ValueError("no images for a grid")
    font = ImageFont.load_default()
    line_h = 12
    text_h = line_h * lines_per_caption + 4
    cols = min(columns, len(images))
    rows = -(-len(images) // cols)
    grid = Image.new("RGB", (cols * cell, rows * (cell + text_h)), "white")
    draw = ImageDraw.Draw(grid)
    for i, (img, caption) in enumerate(zip(images, captions)):
        x, y = (i % cols) * cell, (i // cols) * (cell + text_h)
        thumb = img.convert("RGB").copy()
        thumb.thumbnail((cell, cell))
        grid.paste(thumb, (x + (cell - thumb.width) // 2, y + (cell - thumb.height) // 2))
        for k, line in enumerate(_wrap(caption, chars_per_line)[:lines_per_caption]):
            draw.text((x + 3, y + cell + 2 + k * line_h), line, fill="black", font=font)
    return grid


def _wrap(text: str, width: int) -> list[str]:
    out: list[str] = []
    for para in text.splitlines():
        line = ""
        for word in para.split():
            word = word[:width]
            if line and len(line) + 1 + len(word) > width:
                out.append(line)
                line = word
            else:
                line = f"{line} {word}" if line else word
        out.append(line)
    return out
