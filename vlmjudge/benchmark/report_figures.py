"""The figures of a benchmark's report, each written as SVG (to print or zoom) and as PNG at the
asked resolution (for the page): a dot and its interval per model for each metric, the mean rank
of each model, a heatmap per kind of suite category, and the matrix of ranking agreement.

Figures are drawn on matplotlib's Agg canvas (`vlmjudge.reports.figures.new_figure`), and every
model, method and tag name goes through `plain`, so a `$` in a name never starts mathtext. Files
are named by position, never by a name a user chose.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from vlmjudge.reports.figures import label_color, new_figure, plain, title_lines

#: What a cell with no value shows.
NO_VALUE = "–"
#: Methods side by side in a category heatmap before its panels wrap to a new row.
PANELS_PER_ROW = 3


def save_both(fig: Any, folder: Path, stem: str, dpi: int) -> tuple[str, str]:
    """Write `fig` as `stem.svg` and `stem.png` (at `dpi`) into `folder`; returns both file names.
    The SVG carries no date, so the same board draws the same file."""
    folder.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(folder / f"{stem}.svg", format="svg", metadata={"Date": None})
    fig.savefig(folder / f"{stem}.png", format="png", dpi=dpi)
    return f"{stem}.png", f"{stem}.svg"


def interval_plot(rows: list[dict], method: dict, confidence: float, folder: Path, stem: str, dpi: int) -> tuple:
    """One metric: each model's value as a dot and its interval as a line, best model on top."""
    fig = new_figure(7.0, 0.45 * len(rows) + 1.5)
    ax = fig.subplots()
    ys = list(range(len(rows)))[::-1]
    for y, row in zip(ys, rows):
        if row["value"] is None:
            ax.text(0.5, y, "nothing scored", transform=ax.get_yaxis_transform(), ha="center", va="center",
                    fontsize=8, color="#57606a")
            continue
        if row["low"] is not None and row["high"] is not None:
            ax.plot([row["low"], row["high"]], [y, y], color="#0b5cad", linewidth=2)
        ax.plot([row["value"]], [y], "o", color="#0b5cad")
    ax.set_yticks(ys, [plain(f"{row['model']}") for row in rows])
    ax.set_ylim(-0.7, len(rows) - 0.3)
    direction = {True: "higher is better", False: "lower is better"}.get(method["higher_is_better"], "")
    ax.set_xlabel(plain(f"{method['label']} ({direction}), {round(100 * confidence)}% interval"))
    ax.set_title(title_lines(method["method"]), fontsize=10)
    return save_both(fig, folder, stem, dpi)


def mean_rank_chart(entries: list[dict], n_models: int, folder: Path, stem: str, dpi: int) -> tuple:
    """Each model's mean rank over the methods as a bar (shorter is better), best model on top."""
    fig = new_figure(7.0, 0.45 * len(entries) + 1.5)
    ax = fig.subplots()
    ys = list(range(len(entries)))[::-1]
    for y, entry in zip(ys, entries):
        value = entry["mean_rank"]
        if value is None:
            ax.text(0.05, y, "ranked by no method", va="center", fontsize=8, color="#57606a")
            continue
        ax.barh([y], [value], color="#4C72B0")
        ax.text(value, y, f" {value:.2f} ({entry['n_methods']} methods)", va="center", fontsize=8)
    ax.set_yticks(ys, [plain(entry["model"]) for entry in entries])
    ax.set_xlim(0, max(n_models, 1) * 1.25)
    ax.set_xlabel("mean rank over the methods (1 is best)")
    return save_both(fig, folder, stem, dpi)


def _cell_text(value: float) -> str:
    return NO_VALUE if math.isnan(value) else f"{value:.3g}"


def _labelled_grid(ax: Any, grid: np.ndarray, cmap: str, vmin: float, vmax: float, text=_cell_text) -> Any:
    """Draw a grid with NaN cells grey, each cell labelled in the colour legible on it."""
    from matplotlib import colormaps

    colours = colormaps[cmap].with_extremes(bad="#eeeeee")
    image = ax.imshow(np.ma.masked_invalid(grid), cmap=colours, vmin=vmin, vmax=vmax, aspect="auto")
    for i in range(grid.shape[0]):
        for j in range(grid.shape[1]):
            shade = (0.93, 0.93, 0.93, 1.0) if math.isnan(grid[i, j]) else image.cmap(image.norm(grid[i, j]))
            ax.text(j, i, text(grid[i, j]), ha="center", va="center", fontsize=7, color=label_color(shade))
    return image


def category_heatmap(entries: list[dict], kind: str, models: list[str], methods: list[dict], folder: Path,
                     stem: str, dpi: int) -> tuple:
    """One kind of suite category: a panel per method, a row per tag, a column per model, each cell
    the method's value within the tag (colours scaled within each method, darker is better)."""
    tags = [e["tag"] for e in entries]
    columns = min(len(methods), PANELS_PER_ROW)
    lines = math.ceil(len(methods) / columns)
    fig = new_figure(max(4.0, 1.2 + (0.7 * len(models) + 1.6) * columns), (0.4 * len(tags) + 1.9) * lines)
    axes = np.atleast_1d(fig.subplots(lines, columns)).ravel()
    for ax in axes[len(methods):]:
        ax.set_axis_off()
    for ax, method in zip(axes, methods):
        grid = np.full((len(tags), len(models)), np.nan)
        for i, entry in enumerate(entries):
            for row in entry["rows"]:
                if row["method"] == method["method"] and row["value"] is not None:
                    grid[i, models.index(row["model"])] = row["value"]
        finite = grid[~np.isnan(grid)]
        low, high = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
        if high == low:
            low, high = low - 0.5, high + 0.5
        cmap = "Blues" if method["higher_is_better"] is not False else "Blues_r"
        _labelled_grid(ax, grid, cmap, low, high)
        ax.set_xticks(range(len(models)), [plain(m) for m in models], rotation=45, ha="right", fontsize=8)
        ax.set_yticks(range(len(tags)), [plain(t) for t in tags], fontsize=8)
        ax.set_title(title_lines(f"{method['method']}: {method['label']}", 40), fontsize=9)
    fig.suptitle(plain(f"by {kind}"), fontsize=10)
    return save_both(fig, folder, stem, dpi)


def agreement_matrix(agreement: dict, methods: list[str], folder: Path, stem: str, dpi: int) -> tuple:
    """Kendall's tau between each pair of methods' rankings of the models, from -1 (reversed) to 1."""
    grid = np.full((len(methods), len(methods)), np.nan)
    for pair in agreement["pairs"]:
        i, j = methods.index(pair["a"]), methods.index(pair["b"])
        grid[i, j] = grid[j, i] = np.nan if pair["tau"] is None else pair["tau"]
    np.fill_diagonal(grid, 1.0)
    side = 1.6 + 0.8 * len(methods)
    fig = new_figure(side + 1.0, side)
    ax = fig.subplots()
    image = _labelled_grid(ax, grid, "RdBu", -1.0, 1.0, lambda v: NO_VALUE if math.isnan(v) else f"{v:.2f}")
    ax.set_xticks(range(len(methods)), [plain(m) for m in methods], rotation=45, ha="right", fontsize=8)
    ax.set_yticks(range(len(methods)), [plain(m) for m in methods], fontsize=8)
    fig.colorbar(image, ax=ax, label="Kendall's tau between rankings")
    return save_both(fig, folder, stem, dpi)
