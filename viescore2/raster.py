"""Masks, heatmaps and boxes onto the N x N defect grid, for ground truth and for other evaluators.

By default a map becomes a grid the way the public release (VIEScoreTwo ``build_sft_data.py``)
builds its ground truth, so grids and the numbers computed on them match the release:

- values in [0, 1] are written as an 8-bit image (``(v * 255)`` truncated), resized to N x N
  with Pillow's LANCZOS filter and read back as ``/ 255``;
- a mask cell is a defect where the resized value is ``> 0.5`` (``MASK_THRESHOLD``), a heatmap
  cell where it is ``> 0.25`` (``HEATMAP_THRESHOLD``);
- a defect cell carries a coverage mark where the resized value is ``>= 0.9`` (``MARK_THRESHOLD``);
- a RichHF map is binarised at 0.5 *before* the resize (``grid_from_richhf``).

``resample="area"`` keeps the project's former rule: an exact area mean over the cells (any
image size), a defect where the mean is ``>= threshold``. Every threshold is a parameter.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from .grid import DEFAULT_N, Grid

MASK_THRESHOLD = 0.5
HEATMAP_THRESHOLD = 0.25
#: The mask threshold (`MASK_THRESHOLD`, 0.5) under its former name.
DEFAULT_CELL_THRESHOLD = MASK_THRESHOLD
#: A defect cell carries the coverage mark `!` where its resized value is at least this.
MARK_THRESHOLD = 0.9
BINARIZE_THRESHOLD = 0.5  # RichHF maps: on/off per pixel before the resize
RESAMPLE = "lanczos"
RESAMPLES = ("lanczos", "area")
_EPS = 1e-9  # absorbs rounding in the area means, so a fully covered cell reads as 1.0


def _bin_weights(length: int, n: int) -> np.ndarray:
    """(n, length) matrix: row i averages the pixels overlapping bin [i*L/n, (i+1)*L/n)."""
    edges = np.arange(n + 1) * (length / n)
    lo, hi = edges[:-1, None], edges[1:, None]
    pix = np.arange(length)[None, :]
    overlap = np.clip(np.minimum(pix + 1, hi) - np.maximum(pix, lo), 0.0, None)
    return overlap / (length / n)


def _check_2d(values: np.ndarray) -> None:
    if values.ndim != 2 or min(values.shape) == 0:
        raise ValueError(f"expected a non-empty 2-D array, got shape {values.shape}")


def pool(values: np.ndarray, n: int = DEFAULT_N) -> np.ndarray:
    """Exact area mean of a 2-D array over an n x n grid of equal cells.

    Examples:
        >>> import numpy as np
        >>> mask = np.zeros((8, 8)); mask[:4, :6] = 1
        >>> pool(mask, 2).tolist()
        [[1.0, 0.5], [0.0, 0.0]]
    """
    values = np.asarray(values, dtype=np.float64)
    _check_2d(values)
    rows, cols = _bin_weights(values.shape[0], n), _bin_weights(values.shape[1], n)
    return rows @ values @ cols.T


def lanczos(values: np.ndarray, n: int = DEFAULT_N) -> np.ndarray:
    """The release's resize: [0, 1] values as a truncated 8-bit image, LANCZOS to n x n, back to [0, 1].

    Examples:
        LANCZOS rings a little past a sharp edge, so the release thresholds resized values:

        >>> import numpy as np
        >>> mask = np.zeros((8, 8)); mask[:4, :4] = 1
        >>> lanczos(mask, 2).round(3).tolist()
        [[0.835, 0.078], [0.078, 0.008]]
    """
    from PIL import Image
    values = np.asarray(values, dtype=np.float64)
    _check_2d(values)
    image = Image.fromarray((values * 255).astype(np.uint8), mode="L")
    return np.asarray(image.resize((n, n), Image.LANCZOS), dtype=np.float64) / 255.0


def resize(values: np.ndarray, n: int = DEFAULT_N, resample: str = RESAMPLE) -> np.ndarray:
    """[0, 1] values onto the n x n grid: ``"lanczos"`` (the release) or ``"area"`` (exact area mean).

    Examples:
        >>> import numpy as np
        >>> mask = np.zeros((8, 8)); mask[:4, :4] = 1
        >>> resize(mask, 2, "area").tolist(), resize(mask, 2).shape
        ([[1.0, 0.0], [0.0, 0.0]], (2, 2))
    """
    if resample == "lanczos":
        return lanczos(values, n)
    if resample == "area":
        return pool(values, n)
    raise ValueError(f"resample must be one of {RESAMPLES}, got {resample!r}")


def _check_thresholds(threshold: float, mark_threshold: float | None) -> None:
    if not 0.0 <= threshold <= 1.0:
        raise ValueError(f"threshold must be in [0, 1], got {threshold}")
    if mark_threshold is not None and not 0.0 < mark_threshold <= 1.0:
        raise ValueError(f"mark_threshold must be in (0, 1] or None, got {mark_threshold}")


def grid_from_resized(resized: np.ndarray, threshold: float = MASK_THRESHOLD,
                      mark_threshold: float | None = MARK_THRESHOLD, resample: str = RESAMPLE) -> Grid:
    """Threshold an (n, n) array of resized values: ``> threshold`` (lanczos) or ``>= threshold`` (area).

    Examples:
        A defect above 0.5 (lanczos) or from 0.5 (area), a coverage mark from 0.9:

        >>> import numpy as np
        >>> values = np.array([[0.95, 0.6], [0.5, 0.1]])
        >>> grid_from_resized(values).lines(), grid_from_resized(values, resample="area").lines()
        (['r1: 1!,2'], ['r1: 1!,2', 'r2: 1'])
    """
    _check_thresholds(threshold, mark_threshold)
    resized = np.asarray(resized, dtype=np.float64)
    cells = resized > threshold if resample == "lanczos" else resized >= threshold - _EPS
    marks = cells & (resized >= mark_threshold - _EPS) if mark_threshold is not None else None
    return Grid.from_array(cells, marks)


def grid_from_pooled(pooled: np.ndarray, threshold: float = MASK_THRESHOLD,
                     mark_threshold: float | None = MARK_THRESHOLD) -> Grid:
    """Threshold an already area-pooled (n, n) array (the ``area`` rule: ``>= threshold``).

    Examples:
        >>> import numpy as np
        >>> grid_from_pooled(np.array([[0.5, 0.2], [0.0, 0.0]])).lines()
        ['r1: 1']
    """
    return grid_from_resized(pooled, threshold, mark_threshold, resample="area")


def grid_from_values(values, n: int = DEFAULT_N, threshold: float = MASK_THRESHOLD,
                     mark_threshold: float | None = MARK_THRESHOLD, resample: str = RESAMPLE) -> Grid:
    """Grid from any (H, W) array of [0, 1] values: resize, then threshold (no check that it is binary).

    Examples:
        >>> import numpy as np
        >>> values = np.zeros((8, 8)); values[:4, :4] = 1
        >>> grid_from_values(values, n=2).lines()
        ['r1: 1']
    """
    return grid_from_resized(resize(as_heatmap(values, scale_uint8=False), n, resample), threshold,
                             mark_threshold, resample)


def _plane(array, what: str) -> np.ndarray:
    a = np.asarray(array)
    if a.ndim == 3 and 1 in (a.shape[0], a.shape[-1]):
        a = a.reshape(a.shape[1:] if a.shape[0] == 1 else a.shape[:-1])
    if a.ndim != 2:
        raise ValueError(f"{what} must be 2-D (H, W), got shape {a.shape}")
    return a


def as_mask(mask) -> np.ndarray:
    """Boolean (H, W) mask from bool, {0,1} or {0,255} arrays (PIL images and CPU tensors work).

    Examples:
        >>> import numpy as np
        >>> as_mask(np.array([[0, 255], [255, 0]], dtype=np.uint8)).tolist()
        [[False, True], [True, False]]
        >>> as_mask(np.array([[0.0, 0.4]]))
        Traceback (most recent call last):
        ...
        ValueError: a mask must hold only 0/1 or 0/255 values, got [0.0, 0.4]; use grid_from_heatmap for soft values
    """
    a = _plane(mask, "mask")
    if a.dtype == bool:
        return a
    values = np.unique(a)
    if np.isnan(values.astype(np.float64)).any() or not (set(values.tolist()) <= {0, 1} or
                                                         set(values.tolist()) <= {0, 255}):
        raise ValueError(f"a mask must hold only 0/1 or 0/255 values, got {values[:6].tolist()}; "
                         "use grid_from_heatmap for soft values")
    return a > 0


def as_heatmap(heatmap, scale_uint8: bool = True) -> np.ndarray:
    """Float (H, W) values in [0, 1]; 8-bit input is divided by 255 (with ``scale_uint8=False``
    only when its maximum is above 1, as the release reads label images holding 0/1).

    Examples:
        >>> import numpy as np
        >>> as_heatmap(np.array([[0, 51], [255, 0]], dtype=np.uint8)).tolist()
        [[0.0, 0.2], [1.0, 0.0]]
    """
    a = _plane(heatmap, "heatmap")
    if a.dtype == np.uint8:
        if scale_uint8 or a.max(initial=0) > 1:
            return a.astype(np.float64) / 255.0
        return a.astype(np.float64)
    a = a.astype(np.float64)
    if np.isnan(a).any():
        raise ValueError("a heatmap must not contain NaN")
    if a.min() < 0.0 or a.max() > 1.0:
        raise ValueError(f"a heatmap must lie in [0, 1], got range [{a.min()}, {a.max()}]")
    return a


def grid_from_mask(mask, n: int = DEFAULT_N, threshold: float = MASK_THRESHOLD,
                   mark_threshold: float | None = MARK_THRESHOLD, resample: str = RESAMPLE) -> Grid:
    """Grid from a binary defect mask of any size: a defect where the resized mask is > 0.5.

    Examples:
        >>> import numpy as np
        >>> mask = np.zeros((64, 64), dtype=bool); mask[:32, :16] = True
        >>> grid_from_mask(mask, n=4).lines()
        ['r1: 1!', 'r2: 1']
    """
    return grid_from_values(as_mask(mask).astype(np.float64), n, threshold, mark_threshold, resample)


def grid_from_heatmap(heatmap, n: int = DEFAULT_N, threshold: float = HEATMAP_THRESHOLD,
                      mark_threshold: float | None = MARK_THRESHOLD, resample: str = RESAMPLE) -> Grid:
    """Grid from a [0, 1] heatmap of any size (8-bit maps are divided by 255): a defect where the
    resized heatmap is > 0.25, a coverage mark where it is >= 0.9.

    Examples:
        A soft heatmap counts from 0.25, where a mask needs 0.5:

        >>> import numpy as np
        >>> heat = np.zeros((8, 8)); heat[:4, :4] = 0.3; heat[4:, 4:] = 0.95
        >>> grid_from_heatmap(heat, n=2).lines(), grid_from_mask(heat > 0.5, n=2).lines()
        (['r1: 1', 'r2: 2'], ['r2: 2'])
    """
    return grid_from_values(as_heatmap(heatmap), n, threshold, mark_threshold, resample)


def grid_from_richhf(heatmap, n: int = DEFAULT_N, major_threshold: float | None = MARK_THRESHOLD,
                     binarize_at: float = BINARIZE_THRESHOLD, threshold: float = MASK_THRESHOLD,
                     resample: str = RESAMPLE) -> Grid:
    """Grid of a RichHF channel map (8-bit or [0, 1]): the map binarised at ``binarize_at`` and resized
    gives the defect cells (> 0.5); marks are defect cells whose resized raw map is >= ``major_threshold``.

    ``None`` (a sample without the channel's map) is an empty grid, as in the release.

    Examples:
        Binarised at 0.5 before the resize; a sample without its map is a clean grid:

        >>> import numpy as np
        >>> heat = np.zeros((8, 8)); heat[:4, :4] = 0.3; heat[4:, 4:] = 0.95
        >>> grid_from_richhf(heat, n=2).lines(), grid_from_richhf(None, n=2).lines()
        (['r2: 2'], ['none'])
    """
    if heatmap is None:
        return Grid(n=n)
    raw = as_heatmap(heatmap)
    problem = grid_from_values((raw > binarize_at).astype(np.float64), n, threshold, None, resample)
    if major_threshold is None:
        return problem
    _check_thresholds(threshold, major_threshold)
    high = resize(raw, n, resample) >= major_threshold - _EPS
    return Grid.from_array(problem.to_array(), problem.to_array() & high)


def boxes_to_mask(boxes: Sequence[Sequence[float]], size: tuple[int, int], normalized: bool = False) -> np.ndarray:
    """Binary (H, W) mask of the union of (x0, y0, x1, y1) boxes; ``size`` is (width, height).

    Examples:
        >>> boxes_to_mask([(0, 0, 2, 1)], (4, 2)).astype(int).tolist()
        [[1, 1, 0, 0], [0, 0, 0, 0]]
    """
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
                    threshold: float = MASK_THRESHOLD, mark_threshold: float | None = MARK_THRESHOLD,
                    normalized: bool = False, resample: str = RESAMPLE) -> Grid:
    """Grid from defect boxes on an image of ``size`` (width, height), converted like a mask.

    Examples:
        >>> grid_from_boxes([(0, 0, 0.5, 0.5)], (64, 64), n=2, normalized=True).lines()
        ['r1: 1']
    """
    return grid_from_mask(boxes_to_mask(boxes, size, normalized), n, threshold, mark_threshold, resample)


def grid_from_heatmaps(heatmaps: Sequence, n: int = DEFAULT_N, threshold: float = DEFAULT_CELL_THRESHOLD,
                       mark_threshold: float | None = None) -> Grid:
    """Another evaluator's heatmaps (e.g. artifact and misalignment): each mean-pooled, combined by max
    (the paper's rule for other evaluators; ``>= threshold`` on the pooled maximum).

    Examples:
        Each map mean-pooled, then the maximum over maps thresholded:

        >>> import numpy as np
        >>> artifact = np.zeros((8, 8)); artifact[:4, :4] = 0.6
        >>> misalign = np.zeros((8, 8)); misalign[4:, :4] = 0.4
        >>> grid_from_heatmaps([artifact, misalign], n=2).lines()
        ['r1: 1']
        >>> grid_from_heatmaps([artifact, misalign], n=2, threshold=0.4).lines()
        ['r1: 1', 'r2: 1']
    """
    if len(heatmaps) == 0:
        raise ValueError("need at least one heatmap")
    pooled = np.max([pool(as_heatmap(h), n) for h in heatmaps], axis=0)
    return grid_from_pooled(pooled, threshold, mark_threshold)
