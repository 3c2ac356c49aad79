"""The figures of a benchmark's report, each written as SVG (to print or zoom) and as PNG at the
asked resolution (for the page): a dot and its interval per model for each metric, the mean rank
of each model, a heatmap per kind of suite category, and the matrix of ranking agreement.

They are drawn with the reports' shared helpers (`vlmjudge.reports.figures`, `.intervals`): the
same dot-and-interval plot as the comparison report's leaderboard, heatmaps with a colour bar,
long names shortened with the full name on hover in the SVG. Files are named by position, never
by a name a user chose.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from vlmjudge.reports.figures import FigureFiles, heatmap, label_ticks, new_figure, plain, save_figure, title_lines
from vlmjudge.reports.intervals import interval_plot as draw_intervals

#: What a cell with no value shows.
NO_VALUE = "–"
#: Methods side by side in a category heatmap before its panels wrap to a new row.
PANELS_PER_ROW = 3


def interval_plot(rows: list[dict], method: dict, confidence: float, folder: Path, stem: str,
                  dpi: int) -> FigureFiles:
    """One metric: each model's value as a dot and its interval as a line, best model on top, its n
    and rank range beside it."""
    shown = [{"label": row["model"], "value": row["value"], "low": row["low"], "high": row["high"]} for row in rows]
    notes = [f"n={row['n']}  rank {row['rank_low']}–{row['rank_high']}" if row.get("rank") is not None
             else f"n={row['n']}" for row in rows]
    direction = {True: "higher is better", False: "lower is better"}.get(method["higher_is_better"], "")
    return draw_intervals(shown, folder / f"{stem}.png", dpi=dpi, notes=notes, notes_title="prompts, rank range",
                          xlabel=f"{method['label']} ({direction}), {round(100 * confidence)}% interval",
                          ylabel="model", title=method["method"])


def mean_rank_chart(entries: list[dict], n_models: int, folder: Path, stem: str, dpi: int) -> FigureFiles:
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
    label_ticks(ax, "y", ys, [entry["model"] for entry in entries])
    ax.set_xlim(0, max(n_models, 1) * 1.25)
    ax.set_xlabel("mean rank over the methods (1 is best)")
    ax.set_ylabel("model")
    return save_figure(fig, folder / f"{stem}.png", dpi)


def _cell_text(value: float) -> str:
    return NO_VALUE if math.isnan(value) else f"{value:.3g}"


def category_heatmap(entries: list[dict], kind: str, models: list[str], methods: list[dict], folder: Path,
                     stem: str, dpi: int) -> FigureFiles:
    """One kind of suite category: a panel per method, a row per tag, a column per model, each cell
    the method's value within the tag; colours span that method's values (darker is better), read
    on each panel's colour bar."""
    tags = [e["tag"] for e in entries]
    columns = min(len(methods), PANELS_PER_ROW)
    lines = math.ceil(len(methods) / columns)
    fig = new_figure(max(4.0, 1.2 + (0.7 * len(models) + 2.6) * columns), (0.4 * len(tags) + 2.1) * lines)
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
        heatmap(ax, grid, colorbar=method["label"], scale=(low, high), cmap=cmap, label=_cell_text)
        label_ticks(ax, "x", range(len(models)), models, rotation=45, ha="right", fontsize=8)
        label_ticks(ax, "y", range(len(tags)), tags, fontsize=8)
        ax.set_xlabel("model")
        ax.set_ylabel(plain(kind))
        ax.set_title(title_lines(f"{method['method']}: {method['label']}", 40), fontsize=9)
    fig.suptitle(plain(f"by {kind}"), fontsize=10)
    return save_figure(fig, folder / f"{stem}.png", dpi)


def agreement_matrix(agreement: dict, methods: list[str], folder: Path, stem: str, dpi: int) -> FigureFiles:
    """Kendall's tau between each pair of methods' rankings of the models, on its scale from -1
    (reversed) to 1 (the same order)."""
    grid = np.full((len(methods), len(methods)), np.nan)
    for pair in agreement["pairs"]:
        i, j = methods.index(pair["a"]), methods.index(pair["b"])
        grid[i, j] = grid[j, i] = np.nan if pair["tau"] is None else pair["tau"]
    np.fill_diagonal(grid, 1.0)
    side = 1.6 + 0.8 * len(methods)
    fig = new_figure(side + 1.4, side + 0.4)
    ax = fig.subplots()
    heatmap(ax, grid, colorbar="Kendall's tau between rankings", scale=(-1.0, 1.0), cmap="RdBu",
            label=lambda v: NO_VALUE if math.isnan(v) else f"{v:.2f}")
    label_ticks(ax, "x", range(len(methods)), methods, rotation=45, ha="right", fontsize=8)
    label_ticks(ax, "y", range(len(methods)), methods, fontsize=8)
    ax.set_xlabel("method")
    ax.set_ylabel("method")
    return save_figure(fig, folder / f"{stem}.png", dpi)
