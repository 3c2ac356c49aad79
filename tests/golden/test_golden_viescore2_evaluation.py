"""VIEScore2 ground truth and evaluation against the release (XiandaDu/VIEScoreTwo): one test per corpus
line of tests/data/golden/viescore2/{gt_grid, heatmap_grids, srcc, preference, evaluation, dev_eval}."""
import pytest

from viescore2.annotations import grid_from_annotation
from viescore2.raster import grid_from_richhf

from .replay import cases, decode_array, replay


def cell_list(cells):
    """Cells as the corpora write them: sorted row-major [row, col] pairs."""
    return [list(c) for c in sorted(cells)]


def gt_grid(inp):
    """`grid_from_annotation` on the annotation as the release was given it (PNG files as arrays)."""
    form = inp["data_form"]
    if form == "png_file":
        data = decode_array(inp["image"])
    elif form == "array":
        data = decode_array(inp["array"]).astype(float)
    elif form == "missing_file":
        data = "no-such-annotation.png"
    else:
        data = inp["data"]
    try:
        grid = grid_from_annotation(inp["type"], data, n=inp["grid_size"])
    except (ValueError, FileNotFoundError) as err:
        return {"error": type(err).__name__}
    return {"cells": cell_list(grid.cells)}


@pytest.mark.parametrize("case", cases("viescore2/gt_grid"))
def test_gt_grid(case):
    """Masks > 0.5 and heatmaps > 0.25 after a LANCZOS resize; shapes drawn on the 1000 x 1000 canvas."""
    replay("viescore2/gt_grid", case, gt_grid)


def heatmap_grids(inp):
    grid = grid_from_richhf(decode_array(inp["image"]), n=inp["grid_size"],
                            major_threshold=inp["major_threshold"])
    return {"problem": cell_list(grid.cells), "major": cell_list(grid.marks)}


@pytest.mark.parametrize("case", cases("viescore2/heatmap_grids"))
def test_heatmap_grids(case):
    """RichHF maps binarised at 0.5 before the resize; marks where the resized raw map is >= the threshold."""
    replay("viescore2/heatmap_grids", case, heatmap_grids)
