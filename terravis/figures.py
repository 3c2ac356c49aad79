"""The report's PNG figures: violation shares by level and by type per T2I model (the paper's
Figures A1 and A2), and the score histogram.

Figures are drawn on matplotlib's Agg canvas directly (no pyplot; `vlmjudge.reports.figures`),
so writing a report never changes the caller's matplotlib backend or opens a window.
"""
from __future__ import annotations

import math
import os
from typing import Any, Mapping, Sequence

from vlmjudge.reports.figures import (
    covering_range, heatmap, new_figure, plain, range_note, save_figure, series_label, title_lines,
)

from .records import ImageRecord
from .taxonomy import LEVELS, TAXONOMY

#: TerraVis scores lie in 0-1: the histogram's usual x axis.
SCORE_RANGE = (0.0, 1.0)
LEVEL_COLORS = {"object": "#4C72B0", "interaction": "#DD8452", "scene": "#55A868"}


def plot_level_shares(reports: Sequence[Mapping[str, Any]], path: str | os.PathLike) -> None:
    """Stacked bars per T2I model: the share of its detected violations at each level."""
    fig = new_figure(8, 1.2 + sum(0.45 * (len(r["models"]) + 1) + 0.8 for r in reports))
    axes = fig.subplots(len(reports), 1, squeeze=False)[:, 0]
    for ax, rep in zip(axes, reports):
        rows = [("all models", rep["summary"]), *rep["models"].items()]
        names = [plain(f"{name} (n={s['n_major'] + s['n_minor']})") for name, s in rows]
        left = [0.0] * len(rows)
        for level in LEVELS:
            shares = [s["level_shares"][level] for _, s in rows]
            ax.barh(names, shares, left=left, color=LEVEL_COLORS[level], label=level)
            left = [a + b for a, b in zip(left, shares)]
        ax.set_xlim(0, 1)
        ax.invert_yaxis()
        ax.set_xlabel("share of detected violations")
        ax.set_title(title_lines(f"Violations by level: {rep['label']}"), fontsize=10)
        ax.legend(loc="lower right", fontsize=8)
    save_figure(fig, path)


def plot_type_shares(reports: Sequence[Mapping[str, Any]], path: str | os.PathLike) -> None:
    """A heatmap per evaluator: the share of each T2I model's violations per type (%)."""
    import numpy as np

    widths = [max(len(r["models"]) + 1, 2) for r in reports]
    fig = new_figure(6 + 0.9 * max(widths), 7.5 * len(reports))
    axes = fig.subplots(len(reports), 1, squeeze=False)[:, 0]
    labels = [f"{t.level}: {t.name}" for t in TAXONOMY]
    for ax, rep in zip(axes, reports):
        columns = [("all", rep["summary"]), *rep["models"].items()]
        grid = np.array([[100 * s["type_shares"][t.id] for _, s in columns] for t in TAXONOMY])
        # a model set without violations keeps a 0-100 scale rather than one stretched to nothing
        image = heatmap(ax, grid, cmap="Reds", vmax=grid.max() if grid.max() > 0 else 100.0,
                        label=lambda v: f"{v:.0f}")
        ax.set_yticks(range(len(labels)), labels, fontsize=8)
        ax.set_xticks(range(len(columns)), [plain(name) for name, _ in columns], rotation=30, ha="right",
                      fontsize=8)
        ax.set_title(title_lines(f"Violations by type (% of each model's violations): {rep['label']}", 70),
                     fontsize=10)
        fig.colorbar(image, ax=ax, fraction=0.03, label="% of the model's violations")
    save_figure(fig, path)


def plot_score_histogram(evaluators: Sequence[Any], models: Mapping[str, Mapping[str, str]],
                         path: str | os.PathLike, bins: int = 20) -> None:
    """Stacked histograms of the scores of eligible images, per T2I model; N/A counted in the title,
    and the axis widened (the title says so) should a score lie outside 0-1."""
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
                    stacked=True, label=[series_label(m) for m in names])
            ax.legend(fontsize=8)
        n_na = sum(r.score is None for r in records)
        ax.set_xlim(*span)
        ax.set_xlabel("TerraVis score")
        ax.set_ylabel("images")
        counted = f"{len(records) - n_na} scored, {n_na} N/A or failed"
        note = range_note(scores, SCORE_RANGE)
        ax.set_title(title_lines(f"Scores: {ev.label} ({counted})" + (f"\n{note}" if note else "")), fontsize=10)
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))  # counts of images
    save_figure(fig, path)
