"""Ground-truth grids from stored visual annotations, read as the public release reads them.

Datasets store where a defect is as a ``visual_reason`` (a mask, heatmap, box, polygon or SVG
path); evaluating predicted grids needs each turned into the grid the release would build, so
numbers compare with the release's. Unlike the release, data that cannot be read raises rather
than becoming a clean ground truth.

docs/viescore2.md, "Ground truth from visual annotations", lists the kinds and rules.
"""
from __future__ import annotations

import os
import re
from typing import Any

import numpy as np

from .grid import DEFAULT_N, Grid
from .raster import HEATMAP_THRESHOLD, MASK_THRESHOLD, MARK_THRESHOLD, RESAMPLE, grid_from_values

CANVAS = 1000
MAP_KINDS = ("mask", "heatmap")
SHAPE_KINDS = ("bbox", "polygon", "svg")
_PATH_POINT = re.compile(r"[MLCml]\s*(-?\d+(?:\.\d*)?|-?\.\d+)[,\s]+(-?\d+(?:\.\d*)?|-?\.\d+)")


def load_map(source) -> np.ndarray:
    """An annotation map as an array: a path is opened as a grayscale image; arrays pass through."""
    if isinstance(source, (str, os.PathLike)):
        from PIL import Image
        if not os.path.isfile(source):
            raise FileNotFoundError(f"annotation map {os.fspath(source)!r} does not exist")
        with Image.open(source) as image:
            return np.asarray(image.convert("L"))
    return np.asarray(source)


def _number_pair(point: Any) -> tuple[float, float]:
    if not isinstance(point, (list, tuple)) or len(point) != 2:
        raise ValueError(f"a polygon point is [x, y], got {point!r}")
    return float(point[0]), float(point[1])


def _boxes(data: Any) -> list[tuple[float, float, float, float]]:
    boxes = data if data and isinstance(data[0], (list, tuple)) else [data]
    out = []
    for box in boxes:
        if not isinstance(box, (list, tuple)) or len(box) != 4:
            raise ValueError(f"a box is [x, y, w, h], got {box!r}")
        out.append(tuple(float(v) for v in box))
    return out


def path_points(path: str) -> list[tuple[float, float]]:
    """The points of an SVG path string: the first coordinate pair after each M/L/C/m/l command."""
    if not isinstance(path, str):
        raise ValueError(f"an svg annotation is a path string, got {type(path).__name__}")
    return [(float(x), float(y)) for x, y in _PATH_POINT.findall(path)]


def shape_canvas(kind: str, data: Any, canvas: int = CANVAS) -> np.ndarray:
    """The shape(s) of a ``bbox``/``polygon``/``svg`` annotation drawn as a [0, 1] canvas x canvas mask."""
    from PIL import Image, ImageDraw
    image = Image.new("L", (canvas, canvas), 0)
    draw = ImageDraw.Draw(image)
    if kind == "bbox":
        for x, y, w, h in _boxes(data):
            draw.rectangle([x, y, x + w, y + h], fill=255)
    elif kind == "polygon":
        if not isinstance(data, (list, tuple)):
            raise ValueError(f"a polygon is a list of [x, y] points, got {data!r}")
        points = [_number_pair(p) for p in data]
        if len(points) >= 3:
            draw.polygon(points, fill=255)
    elif kind == "svg":
        points = path_points(data)
        if len(points) >= 3:
            draw.polygon(points, fill=255)
        elif len(points) == 2:
            (x0, y0), (x1, y1) = points
            draw.rectangle([min(x0, x1), min(y0, y1), max(x0, x1), max(y0, y1)], fill=255)
    else:
        raise ValueError(f"unknown shape kind {kind!r}; expected one of {SHAPE_KINDS}")
    return np.asarray(image, dtype=np.float64) / 255.0


def grid_from_annotation(kind: str, data: Any, n: int = DEFAULT_N, canvas: int = CANVAS,
                         mask_threshold: float = MASK_THRESHOLD, heatmap_threshold: float = HEATMAP_THRESHOLD,
                         mark_threshold: float | None = MARK_THRESHOLD, resample: str = RESAMPLE) -> Grid:
    """Ground-truth grid of one annotation (``kind`` in mask, heatmap, bbox, polygon, svg)."""
    if kind not in MAP_KINDS + SHAPE_KINDS:
        raise ValueError(f"unknown annotation kind {kind!r}; expected one of {MAP_KINDS + SHAPE_KINDS}")
    if data is None or (isinstance(data, (list, tuple, str)) and len(data) == 0):
        return Grid(n=n)
    if kind in MAP_KINDS:
        values = load_map(data)
        threshold = mask_threshold if kind == "mask" else heatmap_threshold
    else:
        values, threshold = shape_canvas(kind, data, canvas), mask_threshold
    return grid_from_values(values, n, threshold, mark_threshold, resample)
