"""Figure helpers shared by the methods' reports: an Agg figure, legible heatmap cell labels, a
histogram whose axis shows every value (or says which it cannot), and `plain`, which every label
holding a user's name (a folder, a model) goes through.

Figures are drawn on matplotlib's Agg canvas directly (no pyplot), so writing a report never
changes the caller's matplotlib backend or opens a window. A name is drawn as typed: a `$` in
it would start mathtext, and one folder with two of them stopped the whole report.

Examples:
    >>> label_color((0.4, 0.0, 0.05, 1.0))   # dark red cell: white text
    'white'
    >>> label_color((1.0, 0.96, 0.94, 1.0))  # near-white cell: black text
    'black'
"""
from __future__ import annotations

import math
import os
from typing import Any, Callable, Iterable, Mapping, Sequence

#: The longest line of a figure title, in characters (about the width of an 8-inch figure at 10 pt).
TITLE_CHARS = 90
#: Relative luminance above which a cell is light enough for black text.
LIGHT_CELL = 0.45


def plain(text: object) -> str:
    """`text` as matplotlib draws it literally: each `$` escaped, so no name starts mathtext (and
    a `\\frac{` or `_` in it is drawn as typed; matplotlib drops the escapes outside math).

    Examples:
        >>> print(plain("cost $5 or $6"))
        cost \\$5 or \\$6
    """
    return str(text).replace("$", "\\$")


def title_lines(text: object, width: int = TITLE_CHARS) -> str:
    """A figure title as drawn: each line wrapped at `width` characters (a long model name is broken
    if it must be, never cut off at the figure's edge), then `plain`.

    Examples:
        >>> title_lines("Scores: " + "m" * 30, width=20).splitlines()
        ['Scores: mmmmmmmmmmmm', 'mmmmmmmmmmmmmmmmmm']
    """
    import textwrap

    lines = [part for line in str(text).split("\n") for part in (textwrap.wrap(line, width) or [""])]
    return "\n".join(plain(line) for line in lines)


def series_label(text: object) -> str:
    """A legend entry for a name: `plain`, and kept when it starts with `_` (matplotlib's legend
    skips such labels) by a zero-width space in front.

    Examples:
        >>> series_label("_draft") == "\\u200b_draft"
        True
    """
    label = plain(text)
    return "\u200b" + label if label.startswith("_") else label


def new_figure(width: float, height: float):
    """A matplotlib Figure on its own Agg canvas."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=100)
    FigureCanvasAgg(fig)
    return fig


def save_figure(fig, path: str | os.PathLike) -> None:
    """Lay out and write a figure as PNG, through a temporary file (a failed draw leaves the
    earlier figure: `vlmjudge.outputs.replaced_when_done`)."""
    from ..outputs import replaced_when_done

    fig.tight_layout()
    with replaced_when_done(path) as partial:
        fig.savefig(os.fspath(partial), format="png")


def luminance(rgba: Sequence[float]) -> float:
    """WCAG relative luminance of an RGB(A) colour with channels in 0..1."""
    def linear(c: float) -> float:
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4
    r, g, b = (linear(float(c)) for c in rgba[:3])
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def label_color(rgba: Sequence[float]) -> str:
    """The text colour legible on a cell: black on light cells, white on dark ones."""
    return "black" if luminance(rgba) > LIGHT_CELL else "white"


def heatmap(ax, grid, cmap: str = "Reds", vmax: float | None = None, label: Callable[[float], str] | None = None,
            fontsize: int = 7):
    """Draw `grid` (2-D array) as a heatmap from 0 to `vmax` (its max, or 1 when all zero), each
    cell labelled in the colour legible on it; returns the image for a colourbar."""
    import numpy as np

    values = np.asarray(grid, dtype=float)
    top = vmax if vmax is not None else (float(values.max()) if values.size and values.max() > 0 else 1.0)
    image = ax.imshow(values, cmap=cmap, vmin=0, vmax=top, aspect="auto")
    if label is not None:
        for i in range(values.shape[0]):
            for j in range(values.shape[1]):
                ax.text(j, i, label(values[i, j]), ha="center", va="center", fontsize=fontsize,
                        color=label_color(image.cmap(image.norm(values[i, j]))))
    return image


def covering_range(values: Iterable[float | None], usual: tuple[float, float],
                   margin: float = 0.0) -> tuple[float, float]:
    """The `usual` axis range widened to hold every finite value, so none falls off; a widened end
    gets `margin` (a share of the span) beyond its value, so a marker there is drawn whole.

    Examples:
        >>> covering_range([12.5, -81.6, 99.0], (0.0, 100.0))
        (-81.6, 100.0)
        >>> covering_range([-50.0], (0.0, 100.0), margin=0.1)
        (-65.0, 100.0)
    """
    shown = [float(v) for v in values if v is not None and math.isfinite(float(v))]
    low, high = min([usual[0], *shown]), max([usual[1], *shown])
    pad = margin * (high - low)
    return (low - pad if low < usual[0] else low, high + pad if high > usual[1] else high)


def range_note(values: Iterable[float | None], usual: tuple[float, float]) -> str:
    """What a reader must know about the values an axis over `usual` would not show: how many lie
    outside it (the axis is widened to show them, see `covering_range`) and how many are not
    finite (never drawn); "" when every value is an ordinary one.

    Examples:
        >>> range_note([12.5, -81.6, float("nan")], (0.0, 100.0))
        '1 value outside [0, 100] (lowest -81.6), axis widened to show it; 1 non-finite value not shown'
        >>> range_note([3.0], (0.0, 10.0))
        ''
    """
    kept = [float(v) for v in values if v is not None]
    finite = [v for v in kept if math.isfinite(v)]
    outside = [v for v in finite if not usual[0] <= v <= usual[1]]
    notes = []
    if outside:
        ends = [f"lowest {min(outside):.3g}"] if min(outside) < usual[0] else []
        ends += [f"highest {max(outside):.3g}"] if max(outside) > usual[1] else []
        notes.append(f"{_count(len(outside), 'value')} outside [{usual[0]:g}, {usual[1]:g}] ({', '.join(ends)}), "
                     f"axis widened to show {'it' if len(outside) == 1 else 'them'}")
    if len(kept) > len(finite):
        notes.append(f"{_count(len(kept) - len(finite), 'non-finite value')} not shown")
    return "; ".join(notes)


def _count(n: int, noun: str) -> str:
    """"1 value", "3 values"."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


def histogram(groups: Mapping[str, Sequence[float]], path: str | os.PathLike, xlabel: str, title: str,
              value_range: tuple[float, float] | None = None, bins: int = 20, stacked: bool = True,
              **figure_kw: Any) -> str:
    """Histograms of the values of each group, stacked or side by side (a legend when there are
    several groups). The x axis spans `value_range` widened to every finite value; the returned
    `range_note` (also under the title) says when that happened or a value could not be drawn."""
    fig = new_figure(figure_kw.get("width", 8), figure_kw.get("height", 3.2))
    ax = fig.subplots()
    every = [v for values in groups.values() for v in values]
    drawn = {name: [float(v) for v in values if v is not None and math.isfinite(float(v))]
             for name, values in groups.items()}
    names = [name for name in drawn if drawn[name]]
    span = covering_range(every, value_range) if value_range is not None else None
    if names:
        ax.hist([drawn[n] for n in names], bins=bins, range=span, stacked=stacked,
                label=[series_label(n) for n in names])
        if len(names) > 1:
            ax.legend(fontsize=8)
    if span is not None:
        ax.set_xlim(*span)
    ax.set_xlabel(plain(xlabel))
    ax.set_ylabel("images")
    ax.yaxis.set_major_locator(_integer_ticks())
    note = range_note(every, value_range) if value_range is not None else ""
    ax.set_title(title_lines(f"{title}\n{note}" if note else title), fontsize=10)
    save_figure(fig, path)
    return note


def bars(counts: Mapping[str, float], path: str | os.PathLike, xlabel: str, title: str, color: str = "#4C72B0"
         ) -> None:
    """Horizontal bars, one per key, each labelled with its value."""
    fig = new_figure(7, 1.0 + 0.45 * max(len(counts), 1))
    ax = fig.subplots()
    values = list(counts.values())
    ax.barh([plain(name) for name in counts], values, color=color)
    for y, v in enumerate(values):
        ax.text(v, y, f" {v:g}", va="center", fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel(plain(xlabel))
    ax.set_title(plain(title), fontsize=10)
    ax.set_xlim(0, max(values + [1]) * 1.15)
    ax.xaxis.set_major_locator(_integer_ticks())
    save_figure(fig, path)


def _integer_ticks():
    """Axis ticks on whole numbers only (counts of images)."""
    from matplotlib.ticker import MaxNLocator

    return MaxNLocator(integer=True)
