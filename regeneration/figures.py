"""Figures of a benchmark: image grids (each reference beside every model's regeneration) and
per-round progress of the selected candidates (matplotlib)."""
from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from PIL import Image, ImageDraw

from vlmjudge.reports.figures import series_label

_LABEL_H = 14


def image_grid(rows: Sequence[Sequence[Any]], column_titles: Sequence[str], row_titles: Sequence[str] | None = None,
               cell: int = 128) -> Image.Image:
    """A labelled grid: one row per reference, one column per image source; None leaves a grey cell."""
    from vlmjudge.images import to_pil

    if not rows:
        raise ValueError("an image grid needs at least one row")
    n_cols = len(column_titles)
    if any(len(r) != n_cols for r in rows):
        raise ValueError(f"every row needs {n_cols} cells (one per column title)")
    label_w = 0 if row_titles is None else 96
    grid = Image.new("RGB", (label_w + n_cols * cell, _LABEL_H + len(rows) * (cell + _LABEL_H // 2)), "white")
    draw = ImageDraw.Draw(grid)
    for c, title in enumerate(column_titles):
        draw.text((label_w + c * cell + 2, 1), str(title)[:20], fill="black")
    for r, row in enumerate(rows):
        top = _LABEL_H + r * (cell + _LABEL_H // 2)
        if row_titles is not None:
            draw.text((2, top + cell // 2), str(row_titles[r])[:14], fill="black")
        for c, image in enumerate(row):
            left = label_w + c * cell
            if image is None:
                draw.rectangle((left, top, left + cell - 2, top + cell - 2), fill=(200, 200, 200))
                continue
            thumb = to_pil(image).copy()
            thumb.thumbnail((cell - 2, cell - 2))
            grid.paste(thumb, (left, top))
    return grid


def progress_figure(progress: Mapping[str, Sequence[Mapping[str, Any]]], measures: Sequence[str] = ("clip", "dino")):
    """Lines of the mean selected score per round, one line per model, one panel per measure.

    `progress` maps a model name to rows with `round` and the measures (None rows are skipped).
    """
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(measures), figsize=(4.2 * len(measures), 3.2), squeeze=False)
    for ax, measure in zip(axes[0], measures):
        for model, rows in progress.items():
            points = [(r["round"], r[measure]) for r in rows if r.get(measure) is not None]
            if points:
                xs, ys = zip(*points)
                ax.plot(xs, ys, marker="o", label=series_label(model))
        ax.set_xlabel("round")
        ax.set_ylabel(f"{measure.upper()} (%)" if measure in ("clip", "dino") else measure)
        ax.set_title(f"selected candidate, {measure}")
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=8)
    fig.tight_layout()
    return fig


def save_figure(fig: Any, path: str | os.PathLike) -> None:
    """Write a matplotlib figure and free it."""
    import matplotlib.pyplot as plt

    fig.savefig(path, dpi=120)
    plt.close(fig)
