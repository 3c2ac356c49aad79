"""PNG overlays of defect cells on the judged image, so a reader sees where the judge points.

Each category has its own colour; marked (high-coverage) cells are painted more opaquely
than other cells; the ground truth, when given, is drawn as an outline around its cells.
"""
from __future__ import annotations

import os
from typing import Any

import numpy as np
from PIL import Image

from vlmjudge.images import to_pil

from .evaluation import grid_to_mask
from .grid import CategoryGrids, Grid, Localization, union_of

COLOURS = {"grid": (255, 140, 0), "artifact": (230, 30, 30), "misalign": (30, 90, 235)}
OUTLINE_COLOUR = (255, 255, 0)
FILL_ALPHA = 0.35
MARK_ALPHA = 0.75


def _rgb(image: Any) -> np.ndarray:
    return np.asarray(to_pil(image), dtype=np.float64)


def _erode(mask: np.ndarray) -> np.ndarray:
    padded = np.pad(mask, 1, constant_values=False)
    return (padded[1:-1, 1:-1] & padded[:-2, 1:-1] & padded[2:, 1:-1]
            & padded[1:-1, :-2] & padded[1:-1, 2:])


def outline(mask: np.ndarray, width: int) -> np.ndarray:
    """The inner boundary band, ``width`` pixels thick, of a binary mask."""
    inner = mask
    for _ in range(width):
        inner = _erode(inner)
    return mask & ~inner


def render_overlay(image: Any, localization: Localization, ground_truth: Localization | None = None,
                   fill_alpha: float = FILL_ALPHA, mark_alpha: float = MARK_ALPHA,
                   outline_width: int | None = None) -> Image.Image:
    """The image with predicted cells tinted per category and the ground-truth outline on top."""
    if not 0.0 <= fill_alpha <= 1.0 or not 0.0 <= mark_alpha <= 1.0:
        raise ValueError("alphas must lie in [0, 1]")
    out = _rgb(image)
    height, width = out.shape[:2]
    layers = localization.items() if isinstance(localization, CategoryGrids) else [("grid", localization)]
    for name, grid in layers:
        if not isinstance(grid, Grid):
            raise TypeError(f"localization must be a Grid or CategoryGrids, got {type(grid).__name__}")
        colour = np.array(COLOURS[name], dtype=np.float64)
        cells = grid_to_mask(grid, height, width)
        marks = grid_to_mask(Grid(grid.marks, grid.marks, grid.n), height, width)
        for mask, alpha in ((cells & ~marks, fill_alpha), (marks, mark_alpha)):
            out[mask] = out[mask] * (1.0 - alpha) + colour * alpha
    if ground_truth is not None:
        truth = grid_to_mask(union_of(ground_truth), height, width)
        band = outline(truth, outline_width or max(1, min(height, width) // 128))
        out[band] = OUTLINE_COLOUR
    return Image.fromarray(np.clip(np.rint(out), 0, 255).astype(np.uint8), "RGB")


def save_overlay(path: str | os.PathLike, image: Any, localization: Localization,
                 ground_truth: Localization | None = None, **kwargs: Any) -> None:
    """Write ``render_overlay`` as a PNG file."""
    render_overlay(image, localization, ground_truth, **kwargs).save(path, format="PNG")
