"""Ground-truth grids from stored visual annotations, read as the public release reads them, and
the human protocol of `vlmjudge agreement`.

Datasets store where a defect is as a ``visual_reason`` (a mask, heatmap, box, polygon or SVG
path); evaluating predicted grids needs each turned into the grid the release would build, so
numbers compare with the release's. Unlike the release, data that cannot be read raises rather
than becoming a clean ground truth.

docs/methods/viescore2.md, "Ground truth from visual annotations", lists the kinds and rules.

`PROTOCOL` reads the annotation app's labels (`pq`, `sc` or `score` on 0-10, and grid cells):
SRCC per score, and grid IoU and F1 of the judge's cells against the cells most annotators marked.
"""
from __future__ import annotations

import os
import re
from typing import Any, Mapping

import numpy as np

from vlmjudge.stats.human_sets.protocol import HumanProtocol, confusion_table, majority, number

from .evaluation import Reference, localization_metrics, srcc
from .grid import DEFAULT_N, SCORE_KEYS, Grid
from .parsing import parse_grid
from .raster import HEATMAP_THRESHOLD, MASK_THRESHOLD, MARK_THRESHOLD, RESAMPLE, grid_from_values
from .records import VIEScore2Record

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
    """Ground-truth grid of one annotation (``kind`` in mask, heatmap, bbox, polygon, svg).

    - ``mask`` / ``heatmap``: an image file (grayscale PNG) or an (H, W) array. 8-bit data is divided
      by 255 only when its maximum is above 1 (label images holding 0/1 stay as they are); float data
      is used as given. The map is resized and thresholded by ``viescore2.raster`` (> 0.5 for a mask,
      > 0.25 for a heatmap, after a LANCZOS resize).
    - ``bbox``: ``[x, y, w, h]`` or a list of them, ``polygon``: a list of ``[x, y]`` points, ``svg``: a
      path string whose ``M/L/C/m/l`` coordinate pairs are taken as points (relative commands are read
      as absolute, as the release reads them). Shapes are drawn on a ``canvas`` x ``canvas`` image
      (1000, the release's), resized like a mask. A path of two points is their bounding rectangle.

    An annotation that holds no shape (``None``, ``[]``, fewer than three polygon points) is a clean grid.
    """
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


#: The label fields that hold an annotator's defect cells (their union is the ground truth).
GRID_FIELDS = ("grid", "artifact", "misalign")


def label_scores(label: Mapping[str, Any]) -> Reference:
    """An annotator's `score`, `pq` and `sc` (0-10, any of them) as a Reference, range-checked."""
    return Reference.from_record({"id": label.get("id"), **{k: label.get(k) for k in SCORE_KEYS}})


def rate_label(label: Mapping[str, Any]) -> float | None:
    """An annotator's overall: `score`, else sqrt(pq * sc); None for a label with grid cells only."""
    return label_scores(label).overall


def label_grid(label: Mapping[str, Any], n: int = DEFAULT_N) -> Grid | None:
    """An annotator's defect cells: grid text ("r2: 3,4", "none") or a list of 1-based [row, col]
    in `grid`, `artifact` or `misalign`, united; None when the label marks no grid at all."""
    found = None
    for key in GRID_FIELDS:
        value = label.get(key)
        if value is None:
            continue
        if isinstance(value, str):
            grid = parse_grid(value, n=n, strict=True)[0]
        else:
            grid = Grid({(int(row), int(col)) for row, col in value}, n=n)
        found = grid if found is None else found.union(grid)
    return found


def _people_grid(labels: list[Mapping[str, Any]], n: int) -> Grid | None:
    """The cells at least half of the annotators who drew a grid marked; None when none drew one."""
    grids = [grid for grid in (label_grid(label, n) for label in labels) if grid is not None]
    if not grids:
        return None
    cells = {cell for grid in grids for cell in grid.cells}
    return Grid({cell for cell in cells if majority([cell in grid.cells for grid in grids])}, n=n)


def _mean(values: list[float]) -> float | None:
    """The mean of the numbers given, None when there are none."""
    return sum(values) / len(values) if values else None


def compare_details(rows, records) -> dict[str, Any]:
    """SRCC of each score people gave, and grid IoU/F1 of the judge's cells against theirs (images
    whose record asked for a grid; an unreadable grid counts as a parse failure, as in the paper)."""
    judge_scores = {key: [] for key in SCORE_KEYS}
    human_scores = {key: [] for key in SCORE_KEYS}
    preds, targets = [], []
    for row in rows:
        record = VIEScore2Record.from_json(records[row["id"]])
        for key in SCORE_KEYS:
            judge_scores[key].append(record.scores.get(key))
            human_scores[key].append(_mean([v for v in (number(label.get(key)) for label in row["labels"])
                                            if v is not None]))
        target = _people_grid(row["labels"], record.grid_size)
        if target is not None and record.grid_status is not None:
            preds.append(record.grid)
            targets.append(target)
    measures: dict[str, Any] = {}
    for key in SCORE_KEYS:
        correlation = srcc(judge_scores[key], human_scores[key])
        if correlation.n_valid:
            measures[f"srcc_{key}"] = correlation.value
            measures[f"srcc_{key}_pairs"] = correlation.n_valid
    tables = []
    if targets:
        grids = localization_metrics(preds, targets)
        measures.update({key: grids[key] for key in ("grid_iou", "micro_f1", "micro_precision", "micro_recall",
                                                     "false_alarms", "parse_failures", "grid_images")})
        judged = ["unreadable" if p is None else "defects" if not p.is_empty else "clean" for p in preds]
        tables.append(confusion_table("Defect cells marked (image level)", judged,
                                      ["clean" if t.is_empty else "defects" for t in targets],
                                      ("defects", "clean", "unreadable"), ("defects", "clean")))
    return {"tables": tables, "measures": measures}


#: How VIEScore2's human labels are read and matched to its records (`MethodSpec.human`).
PROTOCOL = HumanProtocol(rate=rate_label, details=compare_details, human_axis="people's overall (0-10)",
                         judge_axis="VIEScore2 overall (0-10)")
