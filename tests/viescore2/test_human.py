"""Ground-truth grids from stored annotations (masks, heatmaps, boxes, polygons, SVG paths)."""
import numpy as np
import pytest
from PIL import Image

from viescore2.grid import Grid
from viescore2.human import grid_from_annotation, path_points, shape_canvas

ALL = {(r, c) for r in range(1, 17) for c in range(1, 17)}


def test_boxes_are_x_y_w_h_on_a_1000_canvas():
    assert grid_from_annotation("bbox", [0, 0, 1000, 1000]).cells == ALL
    left_half = grid_from_annotation("bbox", [[0, 0, 500, 1000]])
    assert left_half.cells == {(r, c) for r in range(1, 17) for c in range(1, 9)}
    assert grid_from_annotation("bbox", [500, 500, 1, 1]).is_empty  # too small for any cell
    with pytest.raises(ValueError, match="box"):
        grid_from_annotation("bbox", [[0, 0, 10]])


def test_polygons_and_paths():
    square = [[0, 0], [500, 0], [500, 500], [0, 500]]
    quarter = {(r, c) for r in range(1, 9) for c in range(1, 9)}
    assert grid_from_annotation("polygon", square).cells == quarter
    assert grid_from_annotation("polygon", square[:2]).is_empty  # fewer than 3 points: no area
    assert grid_from_annotation("svg", "M 0,0 L 500 0 L 500,500 L 0 500 Z").cells == quarter
    assert grid_from_annotation("svg", "M 500 500 L 0,0").cells == quarter  # two points: their rectangle
    assert path_points("M 1.5,2 L 3 4 C 5,6 7,8 9,10") == [(1.5, 2.0), (3.0, 4.0), (5.0, 6.0)]
    assert shape_canvas("polygon", [[0, 0], [5, 0], [5, 5], [0, 5]], canvas=10).sum() == 36  # both edges: 6 x 6


def test_maps_from_arrays_and_files(tmp_path):
    labels = np.zeros((32, 32), np.uint8)
    labels[:16, :16] = 1                     # a 0/1 label image is not divided by 255
    quarter = {(r, c) for r in range(1, 9) for c in range(1, 9)}
    assert grid_from_annotation("mask", labels).cells == quarter
    assert grid_from_annotation("mask", labels * 255).cells == quarter
    path = tmp_path / "mask.png"
    Image.fromarray(labels * 255).save(path)
    assert grid_from_annotation("mask", str(path)) == grid_from_annotation("mask", labels * 255)
    soft = np.full((32, 32), 0.3)
    assert grid_from_annotation("heatmap", soft).cells == ALL and grid_from_annotation("mask", soft).is_empty


def test_empty_and_unreadable_annotations():
    for kind, data in (("mask", None), ("bbox", []), ("svg", ""), ("polygon", [])):
        assert grid_from_annotation(kind, data) == Grid()
    with pytest.raises(ValueError, match="kind"):
        grid_from_annotation("point", [[1, 2]])
    with pytest.raises(ValueError, match="point"):
        grid_from_annotation("polygon", [1, 2, 3])
    with pytest.raises(FileNotFoundError):
        grid_from_annotation("mask", "no-such-file.png")
    with pytest.raises(ValueError, match="0, 1"):
        grid_from_annotation("heatmap", np.full((8, 8), 2.0))
