"""Figure helpers shared by every report: an Agg figure, each figure saved as PNG (at a dpi) and as
SVG, tick labels that wrap or shorten long names (the full name on hover in the SVG), heatmaps with
a colour bar, histograms and bars; `plain` is what every label holding a user's name goes through.

Figures are drawn on matplotlib's Agg canvas directly (no pyplot), so writing a report never
changes the caller's matplotlib backend or opens a window. A name is drawn as typed: a `$` in
it would start mathtext, and one folder with two of them stopped the whole report. A figure
whose axes lack a label is refused when saved (`unlabelled_axes`), as a figure in a paper is.

Examples:
    >>> label_color((0.4, 0.0, 0.05, 1.0))   # dark red cell: white text
    'white'
    >>> short_label("sample_0_seed-0123456789-seed-0123456789-seed-0123456789-end0.png", 24)
    'sample_0_se…789-end0.png'
"""
from __future__ import annotations

import io
import math
import os
import re
from html import escape
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, NamedTuple, Sequence

#: The longest line of a figure title, in characters (about the width of an 8-inch figure at 10 pt).
TITLE_CHARS = 90
#: Relative luminance above which a cell is light enough for black text.
LIGHT_CELL = 0.45
#: The resolution of a report's PNG figures unless `--dpi` says otherwise (the SVG has none).
DEFAULT_DPI = 150
#: The resolutions a PNG may be asked at: below 10 nothing is legible, above 1200 a figure is gigapixels.
DPI_RANGE = (10, 1200)
#: A tick label's line, in characters: longer names wrap at word boundaries, then are shortened.
LABEL_CHARS = 28
#: The lines a wrapped tick label may take before it is shortened instead.
LABEL_LINES = 2
#: Where a name may wrap: after a space, a slash, an underscore or a hyphen.
BREAK_AFTER = re.compile(r"(?<=[\s/_\-])")
#: The figure attribute holding {gid: full name} of the labels that were shortened.
HOVER = "_vlmjudge_hover"


class FigureFiles(NamedTuple):
    """The two files of one figure: the PNG the page shows and the SVG to print or zoom."""

    png: Path
    svg: Path


def figure_files(path: str | os.PathLike) -> FigureFiles:
    """The PNG and SVG of the figure named `path` (its suffix, if any, replaced)."""
    png = Path(path).with_suffix(".png")
    return FigureFiles(png, png.with_suffix(".svg"))


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


def short_label(text: object, width: int = LABEL_CHARS, lines: int = LABEL_LINES) -> str:
    """A name as a tick label: whole when it fits `width`, else wrapped at word boundaries (after a
    space, `/`, `_` or `-`) when it fits `lines` lines, else its start and end around "…" on one
    line (the end is kept: it tells numbered ids apart). The full name goes on hover (`label_ticks`).

    Examples:
        >>> short_label("runs/flux-dev/seed-3", 12)
        'runs/flux-\\ndev/seed-3'
        >>> short_label("a" * 40, 12)
        'aaaaa…aaaaaa'
    """
    text = str(text)
    if len(text) <= width:
        return text
    wrapped: list[str] = []
    for piece in BREAK_AFTER.split(text):
        if wrapped and len(wrapped[-1] + piece.rstrip()) <= width:
            wrapped[-1] += piece
        else:
            wrapped.append(piece)
    wrapped = [line.rstrip() for line in wrapped]
    if len(wrapped) <= lines and all(len(line) <= width for line in wrapped):
        return "\n".join(wrapped)
    tail = (width - 1) // 2 + (width - 1) % 2
    return text[:width - 1 - tail] + "…" + text[-tail:]


def hover(artist: Any, full: str) -> None:
    """Give `artist` the hover text `full` in the SVG (a `<title>` inside its group)."""
    fig = artist.get_figure()
    titles = getattr(fig, HOVER, None)
    if titles is None:
        titles = {}
        setattr(fig, HOVER, titles)
    gid = f"vlmjudge-hover-{len(titles) + 1}"
    artist.set_gid(gid)
    titles[gid] = full


def label_ticks(ax: Any, axis: str, positions: Sequence[float], names: Sequence[object], **text_kw: Any) -> None:
    """Tick labels from names on the `axis` ("x" or "y"): each through `short_label` and `plain`, a
    shortened one with its full name on hover in the SVG. Names that shorten alike are numbered."""
    full = [str(name) for name in names]
    shown = [short_label(name) for name in full]
    if len(set(shown)) < len(shown):  # two names alike once shortened: their positions tell them apart
        shown = [f"{k}. {label}" for k, label in enumerate(shown, 1)]
    setter = ax.set_xticks if axis == "x" else ax.set_yticks
    setter(list(positions), [plain(label) for label in shown], **text_kw)
    ticks = ax.get_xticklabels() if axis == "x" else ax.get_yticklabels()
    for text, name, label in zip(ticks, full, shown):
        if label.replace("\n", "") != name:
            hover(text, name)


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


def check_dpi(dpi: Any) -> int:
    """`dpi` when it is a whole number in `DPI_RANGE`, else a ValueError saying so in one line."""
    if isinstance(dpi, bool) or not isinstance(dpi, int) or not DPI_RANGE[0] <= dpi <= DPI_RANGE[1]:
        raise ValueError(f"dpi must be a whole number from {DPI_RANGE[0]} to {DPI_RANGE[1]}, got {dpi!r}")
    return dpi


def unlabelled_axes(fig: Any) -> list[str]:
    """What a figure leaves unnamed: each drawn axis without a label, each colour bar without one."""
    missing = []
    for k, ax in enumerate(fig.axes, 1):
        if not ax.axison:
            continue
        bar = getattr(ax, "_colorbar", None)
        if bar is not None:
            if not (ax.get_ylabel() or ax.get_xlabel()).strip():
                missing.append(f"colour bar {k}")
            continue
        missing += [f"axes {k} ({ax.get_title() or 'untitled'}): {side} axis" for side, label in
                    (("x", ax.get_xlabel()), ("y", ax.get_ylabel())) if not label.strip()]
    return missing


def save_figure(fig, path: str | os.PathLike, dpi: int = DEFAULT_DPI) -> FigureFiles:
    """Lay out and write a figure as PNG at `dpi` and as SVG (text kept as text, no date, the full
    name of each shortened label on hover), each through a temporary file (a failed draw leaves the
    earlier figure: `vlmjudge.outputs.replaced_when_done`); an axis without a label is a ValueError."""
    import matplotlib

    from ..outputs import replaced_when_done, write_text_whole

    check_dpi(dpi)
    missing = unlabelled_axes(fig)
    if missing:
        raise ValueError(f"figure {Path(path).name} has no label on: {'; '.join(missing)}")
    files = figure_files(path)
    fig.tight_layout()
    with replaced_when_done(files.png) as partial:
        fig.savefig(os.fspath(partial), format="png", dpi=dpi)
    drawn = io.BytesIO()
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "vlmjudge"}):
        fig.savefig(drawn, format="svg", metadata={"Date": None})
    text = drawn.getvalue().decode("utf-8")
    for gid, full in getattr(fig, HOVER, {}).items():
        text = text.replace(f'<g id="{gid}">', f'<g id="{gid}">\n<title>{escape(full)}</title>', 1)
    write_text_whole(files.svg, text)
    return files


def luminance(rgba: Sequence[float]) -> float:
    """WCAG relative luminance of an RGB(A) colour with channels in 0..1."""
    def linear(c: float) -> float:
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4
    r, g, b = (linear(float(c)) for c in rgba[:3])
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def label_color(rgba: Sequence[float]) -> str:
    """The text colour legible on a cell: black on light cells, white on dark ones."""
    return "black" if luminance(rgba) > LIGHT_CELL else "white"


def data_scale(values: Iterable[float]) -> tuple[float, float]:
    """The colour range a heatmap's own values call for: from 0 (or the lowest value, below 0) to
    the highest, so an empty cell of counts or shares looks empty; (0, 1) for none or all zero.

    Examples:
        >>> data_scale([12.0, 40.0, float("nan")]), data_scale([-0.4, 0.3]), data_scale([0.0])
        ((0.0, 40.0), (-0.4, 0.3), (0.0, 1.0))
    """
    finite = [float(v) for v in values if math.isfinite(float(v))]
    low, high = min([0.0, *finite]), max([0.0, *finite])
    return (low, high) if high > low else (low, low + 1.0)


def heatmap(ax, grid, *, colorbar: str, scale: tuple[float, float] | None = None, cmap: str = "Reds",
            label: Callable[[float], str] | None = None, fontsize: int = 7):
    """Draw `grid` (2-D, NaN for no value: grey) as a heatmap over its declared `scale`, else over
    `data_scale` of its values, with a colour bar titled `colorbar` (what a colour means, with its
    unit); each cell labelled in the colour legible on it. Returns the image."""
    import numpy as np
    from matplotlib import colormaps

    values = np.asarray(grid, dtype=float)
    low, high = scale if scale is not None else data_scale(values.ravel())
    colours = colormaps[cmap].with_extremes(bad="#eeeeee")
    image = ax.imshow(np.ma.masked_invalid(values), cmap=colours, vmin=low, vmax=high, aspect="auto")
    if label is not None:
        for (i, j), value in np.ndenumerate(values):
            shade = (0.93, 0.93, 0.93, 1.0) if math.isnan(value) else image.cmap(image.norm(value))
            ax.text(j, i, label(value), ha="center", va="center", fontsize=fontsize, color=label_color(shade))
    ax.get_figure().colorbar(image, ax=ax, fraction=0.04, label=plain(colorbar))
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
              dpi: int = DEFAULT_DPI, ylabel: str = "images", **figure_kw: Any) -> str:
    """Histograms of the values of each group, stacked or side by side (a legend when there are
    several groups), counted on a y axis titled `ylabel`, saved with `save_figure`. The x axis
    spans `value_range` widened to every finite value; the returned `range_note` (also under the
    title) says when that happened or a value could not be drawn."""
    fig = new_figure(figure_kw.get("width", 8), figure_kw.get("height", 3.2))
    ax = fig.subplots()
    every = [v for values in groups.values() for v in values]
    drawn = {name: [float(v) for v in values if v is not None and math.isfinite(float(v))]
             for name, values in groups.items()}
    names = [name for name in drawn if drawn[name]]
    span = covering_range(every, value_range) if value_range is not None else None
    if names:
        ax.hist([drawn[n] for n in names], bins=bins, range=span, stacked=stacked,
                label=[series_label(short_label(n)) for n in names])
        if len(names) > 1:
            ax.legend(fontsize=8)
    if span is not None:
        ax.set_xlim(*span)
    ax.set_xlabel(plain(xlabel))
    ax.set_ylabel(plain(ylabel))
    ax.yaxis.set_major_locator(_integer_ticks())
    note = range_note(every, value_range) if value_range is not None else ""
    ax.set_title(title_lines(f"{title}\n{note}" if note else title), fontsize=10)
    save_figure(fig, path, dpi)
    return note


def bars(counts: Mapping[str, float], path: str | os.PathLike, xlabel: str, title: str, *, ylabel: str,
         color: str = "#4C72B0", dpi: int = DEFAULT_DPI) -> FigureFiles:
    """Horizontal bars, one per key (the keys' axis titled `ylabel`), each labelled with its value."""
    fig = new_figure(7, 1.0 + 0.45 * max(len(counts), 1))
    ax = fig.subplots()
    values = list(counts.values())
    ax.barh(list(range(len(values))), values, color=color)
    label_ticks(ax, "y", range(len(values)), list(counts))
    for y, v in enumerate(values):
        ax.text(v, y, f" {v:g}", va="center", fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel(plain(xlabel))
    ax.set_ylabel(plain(ylabel))
    ax.set_title(plain(title), fontsize=10)
    ax.set_xlim(0, max(values + [1]) * 1.15)
    ax.xaxis.set_major_locator(_integer_ticks())
    return save_figure(fig, path, dpi)


def _integer_ticks():
    """Axis ticks on whole numbers only (counts of images)."""
    from matplotlib.ticker import MaxNLocator

    return MaxNLocator(integer=True)
