"""Dot-and-interval plots, the one drawing of every "value with its interval" figure: the comparison
report's leaderboard and its forest plot of pairwise differences, and the benchmark report's
leaderboard per metric.

A row is a dict with `label`, `value`, `low` and `high` (None where there is none), listed best
first and drawn top down; a note per row (n, p, rank) stands in a column right of the axes, so a
reader of a printed figure sees how much each interval rests on.
"""
from __future__ import annotations

import math
import os
from typing import Any, Mapping, Sequence

from .figures import DEFAULT_DPI, FigureFiles, label_ticks, new_figure, plain, save_figure, title_lines

#: The colour of every dot and interval.
INK = "#0b5cad"
#: What a row without a value says where its dot would be.
NO_VALUE = "nothing scored"


def interval_figure(rows: Sequence[Mapping[str, Any]], *, xlabel: str, ylabel: str, title: str = "",
                    zero_line: bool = False, notes: Sequence[str] | None = None, notes_title: str = "") -> Any:
    """The figure of `rows`: a dot at each value, a line over its interval, a dashed line at 0 with
    `zero_line` (differences), and `notes` (one per row, headed `notes_title`) beside the axes."""
    width = 7.5 + (2.2 if notes else 0.0)
    fig = new_figure(width, 0.45 * len(rows) + 1.6)
    ax = fig.subplots()
    ys = list(range(len(rows)))[::-1]
    for y, row in zip(ys, rows):
        value, low, high = (_finite(row.get(key)) for key in ("value", "low", "high"))
        if value is None:
            ax.text(0.5, y, NO_VALUE, transform=ax.get_yaxis_transform(), ha="center", va="center", fontsize=8,
                    color="#57606a")
            continue
        if low is not None and high is not None:
            ax.plot([low, high], [y, y], color=INK, linewidth=2)
        ax.plot([value], [y], "o", color=INK)
    if zero_line:
        ax.axvline(0.0, color="#57606a", linestyle="--", linewidth=1)
    label_ticks(ax, "y", ys, [row["label"] for row in rows])
    ax.set_ylim(-0.7, len(rows) - 0.3)
    if notes:
        place = ax.get_yaxis_transform()
        for y, note in zip(ys, notes):
            ax.text(1.03, y, plain(note), transform=place, ha="left", va="center", fontsize=8)
        if notes_title:
            ax.text(1.03, len(rows) - 0.4, plain(notes_title), transform=place, ha="left", va="bottom",
                    fontsize=8, fontweight="bold")
    ax.set_xlabel(plain(xlabel))
    ax.set_ylabel(plain(ylabel))
    if title:
        ax.set_title(title_lines(title, 70), fontsize=10)
    return fig


def _finite(value: Any) -> float | None:
    """A number that can be drawn, or None (no value, NaN, an infinity)."""
    return float(value) if isinstance(value, (int, float)) and math.isfinite(value) else None


def interval_plot(rows: Sequence[Mapping[str, Any]], path: str | os.PathLike, *, dpi: int = DEFAULT_DPI,
                  **drawn: Any) -> FigureFiles:
    """`interval_figure(rows, **drawn)` saved as PNG at `dpi` and as SVG (`save_figure`)."""
    return save_figure(interval_figure(rows, **drawn), path, dpi)
