"""Overlay pixels at cell centres: category colours, marked cells, ground-truth outline."""
import numpy as np
from PIL import Image

from viescore2.figures import COLOURS, FILL_ALPHA, MARK_ALPHA, OUTLINE_COLOUR, render_overlay, save_overlay
from viescore2.grid import CategoryGrids, Grid

GREY = np.array([100, 100, 100], dtype=float)


def blend(colour, alpha):
    return tuple(np.rint(GREY * (1 - alpha) + np.array(colour) * alpha).astype(int))


def pixel(img, x, y):
    return tuple(int(v) for v in img.getpixel((x, y)))


def test_cell_centres_single_grid_with_marks_and_outline(tmp_path):
    image = Image.new("RGB", (64, 64), (100, 100, 100))  # n=4: cells of 16 x 16 pixels
    pred = Grid({(1, 1), (1, 2)}, {(1, 2)}, n=4)
    truth = Grid({(4, 4)}, n=4)
    out = render_overlay(image, pred, truth)
    assert out.size == (64, 64) and out.mode == "RGB"
    assert pixel(out, 8, 8) == blend(COLOURS["grid"], FILL_ALPHA)          # centre of (1,1)
    assert pixel(out, 24, 8) == blend(COLOURS["grid"], MARK_ALPHA)         # centre of marked (1,2)
    assert pixel(out, 8, 8) != pixel(out, 24, 8)
    assert pixel(out, 40, 40) == (100, 100, 100)                           # untouched cell
    assert pixel(out, 48, 48) == OUTLINE_COLOUR and pixel(out, 63, 56) == OUTLINE_COLOUR  # outline of (4,4)
    assert pixel(out, 56, 56) == (100, 100, 100)                           # its interior stays visible
    save_overlay(tmp_path / "o.png", image, pred, truth)
    assert pixel(Image.open(tmp_path / "o.png"), 24, 8) == pixel(out, 24, 8)


def test_one_colour_per_category():
    image = np.full((40, 80, 3), 100, dtype=np.uint8)  # width 80, height 40: cells of 20 x 10 pixels
    pred = CategoryGrids(Grid({(2, 1)}, n=4), Grid({(2, 2)}, n=4))
    out = render_overlay(image, pred)
    assert pixel(out, 10, 15) == blend(COLOURS["artifact"], FILL_ALPHA)
    assert pixel(out, 30, 15) == blend(COLOURS["misalign"], FILL_ALPHA)
