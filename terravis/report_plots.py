"""The report's PNG figures: violation shares by level and by type per T2I model (the paper's
Figures A1 and A2), and the score histogram.

Figures are drawn on matplotlib's Agg canvas directly (no pyplot), so writing a report never
changes the caller's matplotlib backend or opens a window.
"""
from __future__ import annotations

import os
from typing import Any, Mapping, Sequence

from .records import ImageRecord
from .taxonomy import LEVELS, TAXONOMY

LEVEL_COLORS = {"object": "#4C72B0", "interaction": "#DD8452", "scene": "#55A868"}


def _figure(width: float, height: float):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=100)
    FigureCanvasAgg(fig)
    return fig


def _save(fig, path: str | os.PathLike) -> None:
    fig.tight_layout()
    fig.savefig(os.fspath(path), format="png")


def plot_level_shares(reports: Sequence[Mapping[str, Any]], path: str | os.PathLike) -> None:
    """Stacked bars per T2I model: the share of its detected violations at each level."""
    fig = _figure(8, 1.2 + sum(0.45 * (len(r["models"]) + 1) + 0.8 for r in reports))
    axes = fig.subplots(len(reports), 1, squeeze=False)[:, 0]
    for ax, rep in zip(axes, reports):
        rows = [("all models", rep["summary"]), *rep["models"].items()]
        names = [f"{name} (n={s['n_major'] + s['n_minor']})" for name, s in rows]
        left = [0.0] * len(rows)
        for level in LEVELS:
            shares = [s["level_shares"][level] for _, s in rows]
            ax.barh(names, shares, left=left, color=LEVEL_COLORS[level], label=level)
            left = [a + b for a, b in zip(left, shares)]
        ax.set_xlim(0, 1)
        ax.invert_yaxis()
        ax.set_xlabel("share of detected violations")
        ax.set_title(f"Violations by level: {rep['label']}", fontsize=10)
        ax.legend(loc="lower right", fontsize=8)
    _save(fig, path)


def plot_type_shares(reports: Sequence[Mapping[str, Any]], path: str | os.PathLike) -> None:
    """A heatmap per evaluator: the share of each T2I model's violations per type (%)."""
    import numpy as np

    widths = [max(len(r["models"]) + 1, 2) for r in reports]
    fig = _figure(6 + 0.9 * max(widths), 7.5 * len(reports))
    axes = fig.subplots(len(reports), 1, squeeze=False)[:, 0]
    labels = [f"{t.level}: {t.name}" for t in TAXONOMY]
    for ax, rep in zip(axes, reports):
        columns = [("all", rep["summary"]), *rep["models"].items()]
        grid = np.array([[100 * s["type_shares"][t.id] for _, s in columns] for t in TAXONOMY])
        image = ax.imshow(grid, cmap="Reds", vmin=0, vmax=max(grid.max(), 1e-9), aspect="auto")
        ax.set_yticks(range(len(labels)), labels, fontsize=8)
        ax.set_xticks(range(len(columns)), [name for name, _ in columns], rotation=30, ha="right", fontsize=8)
        for i in range(grid.shape[0]):
            for j in range(grid.shape[1]):
                ax.text(j, i, f"{grid[i, j]:.0f}", ha="center", va="center", fontsize=7)
        ax.set_title(f"Violations by type (% of each model's violations): {rep['label']}", fontsize=10)
        fig.colorbar(image, ax=ax, fraction=0.03)
    _save(fig, path)


def plot_score_histogram(evaluators: Sequence[Any], models: Mapping[str, Mapping[str, str]],
                         path: str | os.PathLike, bins: int = 20) -> None:
    """Stacked histograms of the scores of eligible images, per T2I model; N/A counted in the title."""
    fig = _figure(8, 3.2 * len(evaluators))
    axes = fig.subplots(len(evaluators), 1, squeeze=False)[:, 0]
    for ax, ev in zip(axes, evaluators):
        records: list[ImageRecord] = ev.records
        by_model: dict[str, list[float]] = {}
        for r in records:
            if r.score is not None:
                by_model.setdefault(models[ev.label][r.image_id], []).append(r.score)
        names = sorted(by_model)
        if names:
            ax.hist([by_model[m] for m in names], bins=bins, range=(0, 1), stacked=True, label=names)
            ax.legend(fontsize=8)
        n_na = sum(r.score is None for r in records)
        ax.set_xlim(0, 1)
        ax.set_xlabel("TerraVis score")
        ax.set_ylabel("images")
        ax.set_title(f"Scores: {ev.label} ({len(records) - n_na} scored, {n_na} N/A or failed)", fontsize=10)
    _save(fig, path)
