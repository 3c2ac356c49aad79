"""Ground-truth grids from masks, heatmaps and boxes; other evaluators' heatmaps."""
import numpy as np
import pytest
from PIL import Image

from viescore2.grid import CategoryGrids, Grid
from viescore2.raster import (DEFAULT_CELL_THRESHOLD, HEATMAP_THRESHOLD, MARK_THRESHOLD, MASK_THRESHOLD, RESAMPLE,
                              boxes_to_mask, grid_from_boxes, grid_from_heatmap, grid_from_heatmaps, grid_from_mask,
                              grid_from_richhf, lanczos, pool)

AREA = "area"  # the project's former rule: exact area means, a defect where the mean is >= the threshold
AREA_HALF = {"resample": AREA, "threshold": 0.5}


def test_default_thresholds_are_the_releases():
    assert DEFAULT_CELL_THRESHOLD == MASK_THRESHOLD == 0.5
    assert HEATMAP_THRESHOLD == 0.25 and MARK_THRESHOLD == 0.9 and RESAMPLE == "lanczos"


def test_mask_cells_by_covered_fraction_and_marks_at_0_9():
    mask = np.zeros((32, 32), dtype=bool)  # n=4: cells of 8 x 8 pixels
    mask[0:8, 0:8] = True        # cell (1,1) fully covered -> marked
    mask[0:8, 8:12] = True       # cell (1,2) half covered -> defect, unmarked
    mask[8:11, 0:8] = True       # cell (2,1) 3/8 covered -> not a defect
    mask[24:32, 24:32] = True    # cell (4,4)
    mask[24, 24] = False         # 63/64 = 0.984 -> still marked
    g = grid_from_mask(mask, n=4, resample=AREA)
    assert g == Grid({(1, 1), (1, 2), (4, 4)}, {(1, 1), (4, 4)}, 4)
    assert (2, 1) in grid_from_mask(mask, n=4, threshold=0.3, resample=AREA).cells
    assert grid_from_mask(mask, n=4, mark_threshold=None, resample=AREA).marks == frozenset()


def test_mask_of_any_size_and_uint8_and_pil():
    mask = np.zeros((30, 20), dtype=np.uint8)  # n=4: cells of 7.5 x 5 pixels
    mask[0:15, 0:10] = 255
    expected = Grid({(1, 1), (1, 2), (2, 1), (2, 2)}, {(1, 1), (1, 2), (2, 1), (2, 2)}, 4)
    assert grid_from_mask(mask, n=4, resample=AREA) == expected
    assert grid_from_mask(Image.fromarray(mask), n=4, resample=AREA) == expected
    # rows 0..7 cover cell row 1 (0..7.5) fully and 0.5 px of row 2 (7.5..15): 0.5/7.5 < 0.5
    part = np.zeros((30, 20), dtype=bool)
    part[0:8, 0:5] = True
    assert grid_from_mask(part, n=4, resample=AREA).cells == {(1, 1)}


def test_mask_smaller_than_the_grid():
    mask = np.array([[1, 0], [0, 0]], dtype=np.uint8)
    g = grid_from_mask(mask, n=4, resample=AREA)
    assert g.cells == {(1, 1), (1, 2), (2, 1), (2, 2)} and g.marks == g.cells


def test_soft_values_are_not_a_mask():
    with pytest.raises(ValueError, match="heatmap"):
        grid_from_mask(np.full((4, 4), 0.5))


def test_heatmap_cells_by_mean_and_marks():
    heat = np.zeros((16, 16))  # n=4: cells of 4 x 4 pixels
    heat[0:4, 0:4] = 0.95        # (1,1) mean 0.95 -> marked
    heat[4:8, 4:8] = 0.6         # (2,2) defect, unmarked
    heat[8:12, 8:10] = 1.0       # (3,3) mean 0.5 -> defect, unmarked
    heat[12:16, 12:16] = 0.4     # (4,4) below the threshold
    assert grid_from_heatmap(heat, n=4, **AREA_HALF) == Grid({(1, 1), (2, 2), (3, 3)}, {(1, 1)}, 4)
    assert grid_from_heatmap((heat * 255).round().astype(np.uint8), n=4, **AREA_HALF).cells == {(1, 1), (2, 2), (3, 3)}
    with pytest.raises(ValueError):
        grid_from_heatmap(heat * 2, n=4)
    with pytest.raises(ValueError):
        grid_from_heatmap(np.full((4, 4), np.nan), n=4)


def test_boxes_at_any_size_pixel_and_normalized():
    size = (40, 20)  # width, height; n=4: cells of 10 x 5 pixels
    g = grid_from_boxes([(0, 0, 10, 5), (10, 5, 15, 10)], size, n=4, resample=AREA)
    assert g == Grid({(1, 1), (2, 2)}, {(1, 1)}, 4)
    corner = grid_from_boxes([(0.75, 0.75, 1.0, 1.0)], size, n=4, normalized=True, resample=AREA)
    assert corner == Grid({(4, 4)}, {(4, 4)}, 4)
    # overlapping boxes count once (a union), never above full coverage
    assert boxes_to_mask([(0, 0, 4, 4), (2, 2, 6, 6)], (8, 8)).sum() == 28
    with pytest.raises(ValueError):
        grid_from_boxes([(5, 5, 1, 1)], size, n=4)


def test_category_union_is_the_set_union():
    art = grid_from_mask(np.pad(np.ones((8, 8), bool), ((0, 24), (0, 24))), n=4, resample=AREA)
    mis = grid_from_heatmap(np.pad(np.full((8, 8), 0.6), ((0, 24), (0, 24))), n=4, **AREA_HALF)
    assert art == Grid({(1, 1)}, {(1, 1)}, 4)
    assert mis == Grid({(1, 1)}, set(), 4)
    both = CategoryGrids(art, grid_from_mask(np.pad(np.ones((8, 8), bool), ((24, 0), (24, 0))), n=4, resample=AREA))
    assert both.union() == Grid({(1, 1), (4, 4)}, {(1, 1), (4, 4)}, 4)


def test_other_evaluators_heatmaps_are_pooled_then_combined_by_max():
    art = np.zeros((16, 16))
    mis = np.zeros((16, 16))
    art[0:4, 0:4] = 0.7          # (1,1) from artifacts
    mis[12:16, 12:16] = 0.8      # (4,4) from misalignments
    art[8:12, 8:10] = 1.0        # (3,3): left half artifact,
    mis[8:12, 10:12] = 1.0       #        right half misalignment
    g = grid_from_heatmaps([art, mis], n=4, threshold=0.6)
    # pooled first: (3,3) is max(0.5, 0.5) = 0.5 < 0.6; a pixel-wise max would give 1.0
    assert g == Grid({(1, 1), (4, 4)}, set(), 4)


def test_pool_is_an_exact_area_mean():
    values = np.arange(12, dtype=float).reshape(3, 4)
    pooled = pool(values, n=2)
    # cell (1,1) covers rows 0..1.5 and columns 0..2: row 0 whole, row 1 half, over an area of 3
    assert pooled[0, 0] == pytest.approx((0 + 1 + 0.5 * (4 + 5)) / 3)
    # cell (2,2): rows 1.5..3, columns 2..4: half of row 1, all of row 2
    assert pooled[1, 1] == pytest.approx((0.5 * (6 + 7) + 10 + 11) / 3)
    assert pooled.mean() == pytest.approx(values.mean())


def test_release_rasterisation_is_the_default():
    # a constant 0.5 becomes 127 as an 8-bit image (truncation), 0.498 after the resize: not > 0.5
    assert grid_from_mask(np.ones((32, 32), bool), n=4).cells == {(r, c) for r in range(1, 5) for c in range(1, 5)}
    assert lanczos(np.full((32, 32), 0.5), n=4).max() == pytest.approx(127 / 255)
    from viescore2.raster import grid_from_values
    assert grid_from_values(np.full((32, 32), 0.5), n=4).is_empty
    # heatmaps use > 0.25: a flat 0.3 map is a defect everywhere, unmarked; the mask rule rejects it
    heat = np.full((32, 32), 0.3)
    assert len(grid_from_heatmap(heat, n=4).cells) == 16 and not grid_from_heatmap(heat, n=4).marks
    assert grid_from_heatmap(heat, n=4, threshold=MASK_THRESHOLD).is_empty
    # LANCZOS rings: a cell just outside a sharp edge picks up no defect, the covered half does
    mask = np.zeros((32, 32), bool)
    mask[:, :16] = True
    assert grid_from_mask(mask, n=4).cells == {(r, c) for r in range(1, 5) for c in (1, 2)}
    with pytest.raises(ValueError, match="resample"):
        grid_from_mask(mask, n=4, resample="bicubic")


def test_richhf_maps_are_binarised_before_the_resize():
    low = np.full((32, 32), 115, np.uint8)    # 0.45: below 0.5 per pixel, so no defect at all
    assert grid_from_richhf(low, n=4).is_empty
    assert not grid_from_heatmap(low, n=4).is_empty  # a heatmap reading would flag it (> 0.25)
    mid = np.full((32, 32), 153, np.uint8)    # 0.6: every pixel on, no cell reaches the 0.9 mark
    g = grid_from_richhf(mid, n=4)
    assert len(g.cells) == 16 and not g.marks
    assert grid_from_richhf(mid, n=4, major_threshold=0.5).marks == g.cells
    high = mid.copy()
    high[:8, :8] = 250                        # cell (1, 1) is major
    assert grid_from_richhf(high, n=4).marks == {(1, 1)}
    assert grid_from_richhf(None, n=4) == Grid(n=4)
