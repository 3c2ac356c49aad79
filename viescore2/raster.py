"""Masks, heatmaps and boxes onto the N x N defect grid, for ground truth and for other evaluators.

Every input is area-averaged onto the grid (exact fractional overlaps, so any image size
works). A cell is a defect when its averaged value is at least ``threshold``
(``DEFAULT_CELL_THRESHOLD`` = 0.5: at least half of a mask cell covered, or a mean heatmap
value of 0.5; the paper does not state its value). A defect cell carries a coverage mark
when its averaged value is at least ``MARK_THRESHOLD`` = 0.9, as in the paper.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from .grid import DEFAULT_N, Grid

DEFAULT_CELL_THRESHOLD = 0.5
MARK_THRESHOLD = 0.9
_EPS = 1e-9  # absorbs rounding in the pooled means, so a fully covered cell reads as 1.0


def _bin_weights(length: int, n: int) -> np.ndarray:
    """(n, length) matrix: row i averages the pixels overlapping bin [i*L/n, (i+1)*L/n)."""
    edges = np.arange(n + 1) * (length / n)
    lo, hi = edges[:-1, None], edges[1:, None]
    pix = np.arange(length)[None, :]
    overlap = np.clip(np.minimum(pix + 1, hi) - np.maximum(pix, lo), 0.0, None)
    return overlap / (length / n)


def pool(values: np.ndarray, n: int = DEFAULT_N) -> np.ndarray:
    """Exact area mean of a 2-D array over an n x n grid of equal cells."""
    values = np.asarray(values, dtype=np.float64)
    if values.ndim != 2 or min(values.shape) == 0:
        raise ValueError(f"expected a non-empty 2-D array, got shape {values.shape}")
    rows, cols = _bin_weights(values.shape[0], n), _bin_weights(values.shape[1], n)
    return rows @ values @ cols.T


def _check_thresholds(threshold: float, mark_threshold: float | None) -> None:
    if not 0.0 < threshold <= 1.0:
        raise ValueError(f"threshold must be in (0, 1], got {threshold}")
    if mark_threshold is not None and not 0.0 < mark_threshold <= 1.0:
        raise ValueError(f"mark_threshold must be in (0, 1] or None, got {mark_threshold}")


def grid_from_pooled(pooled: np.ndarray, threshold: float = DEFAULT_CELL_THRESHOLD,
                     mark_threshold: float | None = MARK_THRESHOLD) -> Grid:
    """Threshold an already pooled (n, n) array into a grid with coverage marks."""
    _check_thresholds(threshold, mark_threshold)
    pooled = np.asarray(pooled, dtype=np.float64)
    cells = pooled >= threshold - _EPS
    marks = cells & (pooled >= mark_threshold - _EPS) if mark_threshold is not None else None
    return Grid.from_array(cells, marks)


def _plane(array, what: str) -> np.ndarray:
    a = np.asarray(array)
    if a.ndim == 3 and 1 in (a.shape[0], a.shape[-1]):
        a = a.reshape(a.shape[1:] if a.shape[0] == 1 else a.shape[:-1])
    if a.ndim != 2:
        raise ValueError(f"{what} must be 2-D (H, W), got shape {a.shape}")
    return a


def as_mask(mask) -> np.ndarray:
    """Boolean (H, W) mask from bool, {0,1} or {0,255} arrays (PIL images and CPU tensors work)."""
    a = _plane(mask, "mask")
    if a.dtype == bool:
        return a
    values = np.unique(a)
    if np.isnan(values.astype(np.float64)).any() or not (set(values.tolist()) <= {0, 1} or
                                                         set(values.tolist()) <= {0, 255}):
        raise ValueError(f"a mask must hold only 0/1 or 0/255 values, got {values[:6].tolist()}; "
                         "use grid_from_heatmap for soft values")
    return a > 0


def as_heatmap(heatmap) -> np.ndarray:
    """Float (H, W) heatmap in [0, 1]; uint8 input is scaled by 1/255."""
    a = _plane(heatmap, "heatmap")
    if a.dtype == np.uint8:
        return a.astype(np.float64) / 255.0
    a = a.astype(np.float64)
    if np.isnan(a).any():
        raise ValueError("a heatmap must not contain NaN")
    if a.min() < 0.0 or a.max() > 1.0:
        raise ValueError(f"a heatmap must lie in [0, 1], got range [{a.min()}, {a.max()}]")
    return a


def grid_from_mask(mask, n: int = DEFAULT_N, threshold: float = DEFAULT_CELL_THRESHOLD,
                   mark_threshold: float | None = MARK_THRESHOLD) -> Grid:
    """Grid from a binary defect mask of any size: cells by covered fraction, marks at >= 0.9."""
    return grid_from_pooled(pool(as_mask(mask), n), threshold, mark_threshold)


def grid_from_heatmap(heatmap, n: int = DEFAULT_N, threshold: float = DEFAULT_CELL_THRESHOLD,
                      mark_threshold: float | None = MARK_THRESHOLD) -> Grid:
    """Grid from a [0, 1] heatmap of any size: cells by mean value, marks where the mean is >= 0.9."""
    return grid_from_pooled(pool(as_heatmap(heatmap), n), threshold, mark_threshold)


def boxes_to_mask(boxes: Sequence[Sequence[float]], size: tuple[int, int], normalized: bool = False) -> np.ndarray:
    """Binary (H, W) mask of the union of (x0, y0, x1, y1) boxes; ``size`` is (width, height)."""
    width, height = (int(v) for v in size)
    if width <= 0 or height <= 0:
        raise ValueError(f"image size must be positive (width, height), got {size}")
    mask = np.zeros((height, width), dtype=bool)
    for box in boxes:
        if len(box) != 4:
            raise ValueError(f"a box is (x0, y0, x1, y1), got {box!r}")
        x0, y0, x1, y1 = (float(v) for v in box)
        if normalized:
            x0, x1, y0, y1 = x0 * width, x1 * width, y0 * height, y1 * height
        if x1 < x0 or y1 < y0:
            raise ValueError(f"box corners out of order: {box!r}")
        c0, c1 = (int(np.clip(round(v), 0, width)) for v in (x0, x1))
        r0, r1 = (int(np.clip(round(v), 0, height)) for v in (y0, y1))
        mask[r0:r1, c0:c1] = True
    return mask


def grid_from_boxes(boxes: Sequence[Sequence[float]], size: tuple[int, int], n: int = DEFAULT_N,
                    threshold: float = DEFAULT_CELL_THRESHOLD, mark_threshold: float | None = MARK_THRESHOLD,
                    normalized: bool = False) -> Grid:
    """Grid from defect boxes on an image of ``size`` (width, height), converted like a mask."""
    return grid_from_mask(boxes_to_mask(boxes, size, normalized), n, threshold, mark_threshold)


def grid_from_heatmaps(heatmaps: Sequence, n: int = DEFAULT_N, threshold: float = DEFAULT_CELL_THRESHOLD,
                       mark_threshold: float | None = None) -> Grid:
    """Another evaluator's heatmaps (e.g. artifact and misalignment): each mean-pooled, combined by max."""
    if len(heatmaps) == 0:
        raise ValueError("need at least one heatmap")
    pooled = np.max([pool(as_heatmap(h), n) for h in heatmaps], axis=0)
    return grid_from_pooled(pooled, threshold, mark_threshold)
