"""The report's figures: violation shares by level and by type per T2I model (the paper's Figures
A1 and A2), and the score histogram; each saved as PNG at the report's dpi and as SVG.

Figures are drawn on matplotlib's Agg canvas directly (no pyplot; `vlmjudge.reports.figures`),
so writing a report never changes the caller's matplotlib backend or opens a window. With one
T2I model, its row is the evaluator's whole set: it is drawn once, not again as "all models".
"""
from __future__ import annotations

import math
import os
from typing import Any, Mapping, Sequence

from vlmjudge.reports.figures import (
    DEFAULT_DPI, FigureFiles, covering_range, heatmap, label_ticks, new_figure, range_note, save_figure, series_label,
    short_label, title_lines,
)

from .records import ImageRecord
from .taxonomy import LEVELS, TAXONOMY

#: TerraVis scores lie in 0-1: the histogram's usual x axis.
SCORE_RANGE = (0.0, 1.0)
LEVEL_COLORS = {"object": "#4C72B0", "interaction": "#DD8452", "scene": "#55A868"}
#: The row (or column) of an evaluator's images of every T2I model together.
ALL_MODELS = "all models"


def model_rows(report: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """(name, summary) of the evaluator's images of every model together, then of each model; one
    model's own row only, when it is the only one (the same images, the same numbers).

    Examples:
        >>> [name for name, _ in model_rows({"summary": {}, "models": {"all images": {}}})]
        ['all images']
        >>> [name for name, _ in model_rows({"summary": {}, "models": {"m1": {}, "m2": {}}})]
        ['all models', 'm1', 'm2']
    """
    models = list(report["models"].items())
    return models if len(models) == 1 else [(ALL_MODELS, report["summary"]), *models]


def level_shares_figure(reports: Sequence[Mapping[str, Any]]) -> Any:
    """Stacked bars per T2I model: the share (%) of its detected violations at each level."""
    fig = new_figure(8, 1.2 + sum(0.45 * len(model_rows(r)) + 0.9 for r in reports))
    axes = fig.subplots(len(reports), 1, squeeze=False)[:, 0]
    for ax, rep in zip(axes, reports):
        rows = model_rows(rep)
        ys = list(range(len(rows)))
        left = [0.0] * len(rows)
        for level in LEVELS:
            shares = [100 * s["level_shares"][level] for _, s in rows]
            ax.barh(ys, shares, left=left, color=LEVEL_COLORS[level], label=level)
            left = [a + b for a, b in zip(left, shares)]
        label_ticks(ax, "y", ys, [f"{name} (n={s['n_major'] + s['n_minor']})" for name, s in rows])
        ax.set_xlim(0, 100)
        ax.invert_yaxis()
        ax.set_xlabel("share of the detected violations (%)")
        ax.set_ylabel("T2I model (n violations)")
        ax.set_title(title_lines(f"Violations by level: {rep['label']}"), fontsize=10)
        ax.legend(loc="lower right", fontsize=8)
    return fig


def plot_level_shares(reports: Sequence[Mapping[str, Any]], path: str | os.PathLike,
                      dpi: int = DEFAULT_DPI) -> FigureFiles:
    """`level_shares_figure`, saved as PNG at `dpi` and as SVG."""
    return save_figure(level_shares_figure(reports), path, dpi)


def type_shares_figure(reports: Sequence[Mapping[str, Any]]) -> Any:
    """A heatmap per evaluator: the share (%) of each T2I model's violations per type, coloured from
    0 to the largest share (a colour bar reads it)."""
    import numpy as np

    widths = [max(len(model_rows(r)), 2) for r in reports]
    fig = new_figure(6.5 + 0.9 * max(widths), 7.5 * len(reports))
    axes = fig.subplots(len(reports), 1, squeeze=False)[:, 0]
    labels = [f"{t.level}: {t.name}" for t in TAXONOMY]
    for ax, rep in zip(axes, reports):
        columns = model_rows(rep)
        grid = np.array([[100 * s["type_shares"][t.id] for _, s in columns] for t in TAXONOMY])
        heatmap(ax, grid, colorbar="% of the model's violations", cmap="Reds", label=lambda v: f"{v:.0f}")
        ax.set_yticks(range(len(labels)), labels, fontsize=8)
        label_ticks(ax, "x", range(len(columns)), [name for name, _ in columns], rotation=30, ha="right",
                    fontsize=8)
        ax.set_xlabel("T2I model")
        ax.set_ylabel("violation (level: type)")
        ax.set_title(title_lines(f"Violations by type (% of each model's violations): {rep['label']}", 70),
                     fontsize=10)
    return fig


def plot_type_shares(reports: Sequence[Mapping[str, Any]], path: str | os.PathLike,
                     dpi: int = DEFAULT_DPI) -> FigureFiles:
    """`type_shares_figure`, saved as PNG at `dpi` and as SVG."""
    return save_figure(type_shares_figure(reports), path, dpi)


def score_histogram_figure(evaluators: Sequence[Any], models: Mapping[str, Mapping[str, str]], bins: int = 20) -> Any:
    """Stacked histograms of the scores of eligible images, per T2I model (a legend when there are
    several); N/A counted in the title, and the axis widened (the title says so) should a score
    lie outside 0-1."""
    from matplotlib.ticker import MaxNLocator

    fig = new_figure(8, 3.2 * len(evaluators))
    axes = fig.subplots(len(evaluators), 1, squeeze=False)[:, 0]
    for ax, ev in zip(axes, evaluators):
        records: list[ImageRecord] = ev.records
        by_model: dict[str, list[float]] = {}
        for r in records:
            if r.score is not None:
                by_model.setdefault(models[ev.label][r.id], []).append(r.score)
        names = sorted(by_model)
        scores = [v for m in names for v in by_model[m]]
        span = covering_range(scores, SCORE_RANGE)
        if names:
            ax.hist([[v for v in by_model[m] if math.isfinite(v)] for m in names], bins=bins, range=span,
                    stacked=True, label=[series_label(short_label(m)) for m in names])
            if len(names) > 1:
                ax.legend(fontsize=8, title="T2I model", title_fontsize=8)
        n_na = sum(r.score is None for r in records)
        ax.set_xlim(*span)
        ax.set_xlabel("TerraVis score (0-1, higher is better)")
        ax.set_ylabel("images")
        counted = f"{len(records) - n_na} scored, {n_na} N/A or failed"
        note = range_note(scores, SCORE_RANGE)
        ax.set_title(title_lines(f"Scores: {ev.label} ({counted})" + (f"\n{note}" if note else "")), fontsize=10)
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))  # counts of images
    return fig


def plot_score_histogram(evaluators: Sequence[Any], models: Mapping[str, Mapping[str, str]],
                         path: str | os.PathLike, bins: int = 20, dpi: int = DEFAULT_DPI) -> FigureFiles:
    """`score_histogram_figure`, saved as PNG at `dpi` and as SVG."""
    return save_figure(score_histogram_figure(evaluators, models, bins), path, dpi)
