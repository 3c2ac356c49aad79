"""Figures fit for a paper or a slide (issue 52, item 2), in the shared helpers every report draws
with: each figure as SVG and as PNG at a dpi, no axis without a label, heatmap colours over the
data's range or a declared one with a colour bar, long names wrapped or shortened with the full
name on hover (SVG `<title>`, HTML `title=`), and one dot-and-interval drawing with n and p."""
import xml.etree.ElementTree as ElementTree

import numpy as np
import pytest
from PIL import Image

from vlmjudge.reports.figures import (
    DEFAULT_DPI, check_dpi, heatmap, label_ticks, new_figure, save_figure, short_label, unlabelled_axes,
)
from vlmjudge.reports.intervals import interval_figure
from vlmjudge.reports.page import breakable, table

SVG = "{http://www.w3.org/2000/svg}"
#: A name no boundary splits: it can only be shortened.
UNBROKEN = "generatorcheckpoint" * 4 + "final"


def labelled(width=4, height=3):
    fig = new_figure(width, height)
    ax = fig.subplots()
    ax.plot([0, 1], [0, 1])
    ax.set_xlabel("score (0-1)")
    ax.set_ylabel("images")
    return fig, ax


def svg_texts(path):
    """Every text of an SVG figure, its lines as drawn."""
    return ["".join(t.itertext()) for t in ElementTree.parse(path).getroot().iter(f"{SVG}text")]


def test_a_figure_is_written_as_svg_and_as_png_at_its_dpi(tmp_path):
    sizes = {}
    for dpi in (50, 100):
        fig, _ = labelled()
        files = save_figure(fig, tmp_path / f"f{dpi}.png", dpi)
        assert files.png.name == f"f{dpi}.png" and files.svg.name == f"f{dpi}.svg"
        with Image.open(files.png) as image:
            sizes[dpi] = image.size
        svg = files.svg.read_text()
        assert ElementTree.fromstring(svg).tag == f"{SVG}svg" and "<dc:date>" not in svg
        assert "score (0-1)" in svg_texts(files.svg)  # text stays text: searchable, editable in print
    assert abs(sizes[100][0] - 2 * sizes[50][0]) <= 2 and DEFAULT_DPI == 150


def test_the_same_figure_draws_the_same_svg(tmp_path):
    first, second = (save_figure(labelled()[0], tmp_path / name).svg.read_bytes() for name in ("a.png", "b.png"))
    assert first == second


@pytest.mark.parametrize("dpi", [0, 9, 1201, 72.5, True, "150", None])
def test_a_dpi_out_of_range_or_not_whole_is_refused(dpi, tmp_path):
    with pytest.raises(ValueError, match="dpi must be a whole number from 10 to 1200"):
        check_dpi(dpi)
    with pytest.raises(ValueError, match="dpi"):
        save_figure(labelled()[0], tmp_path / "f.png", dpi)
    assert not list(tmp_path.iterdir())


def test_an_axis_or_colour_bar_without_a_label_is_refused(tmp_path):
    fig, ax = labelled()
    ax.set_ylabel("")
    assert unlabelled_axes(fig) == ["axes 1 (untitled): y axis"]
    with pytest.raises(ValueError, match="no label on: axes 1"):
        save_figure(fig, tmp_path / "f.png")
    fig, ax = labelled()
    fig.colorbar(ax.imshow([[1, 2]]), ax=ax)
    assert unlabelled_axes(fig) == ["colour bar 2"]
    assert not list(tmp_path.iterdir())


def test_a_heatmap_colours_its_data_range_or_its_declared_scale_with_a_colour_bar():
    fig, ax = labelled()
    shares = heatmap(ax, [[40.0, 55.0], [60.0, np.nan]], colorbar="% of images")
    assert (shares.norm.vmin, shares.norm.vmax) == (0.0, 60.0)  # from 0, as shares are, to the largest
    assert fig.axes[-1].get_ylabel() == "% of images"  # the colour bar, labelled
    fig, ax = labelled()
    values = heatmap(ax, [[0.41, 0.47], [0.52, 0.44]], colorbar="mean score", scale=(0.41, 0.52))
    assert (values.norm.vmin, values.norm.vmax) == (0.41, 0.52)
    fig, ax = labelled()
    tau = heatmap(ax, [[1.0, 0.2]], colorbar="Kendall's tau", scale=(-1.0, 1.0), cmap="RdBu")
    assert (tau.norm.vmin, tau.norm.vmax) == (-1.0, 1.0) and unlabelled_axes(fig) == []


@pytest.mark.parametrize("name, shown", [
    ("sdxl", "sdxl"),
    ("runs/flux-dev/seed-3", "runs/flux-dev/seed-3"),
    ("stable-diffusion-xl-base-1.0-refiner-seed-7", "stable-diffusion-xl-base-\n1.0-refiner-seed-7"),
    (UNBROKEN, UNBROKEN[:13] + "…" + UNBROKEN[-14:]),
])
def test_long_names_wrap_at_word_boundaries_or_are_shortened(name, shown):
    label = short_label(name)
    assert label == shown and all(len(line) <= 28 for line in label.split("\n"))


def test_a_shortened_tick_label_carries_its_full_name_on_hover_in_the_svg(tmp_path):
    fig, ax = labelled(6, 3)
    label_ticks(ax, "y", [0, 1], [UNBROKEN, "sdxl"])
    files = save_figure(fig, tmp_path / "f.png")
    root = ElementTree.parse(files.svg).getroot()
    titled = {"".join(g.find(f"{SVG}title").itertext()): "".join("".join(t.itertext()) for t in g.iter(f"{SVG}text"))
              for g in root.iter(f"{SVG}g") if g.find(f"{SVG}title") is not None}
    assert titled == {UNBROKEN: short_label(UNBROKEN)}  # "sdxl" is whole: nothing to hover for


def test_names_alike_once_shortened_are_told_apart_by_their_position():
    fig, ax = labelled(6, 3)
    names = ["a" * 40 + "-x" + "b" * 20, "a" * 40 + "-y" + "b" * 20]
    label_ticks(ax, "y", [0, 1], names)
    shown = [t.get_text() for t in ax.get_yticklabels()]
    assert len(set(shown)) == 2 and shown[0].startswith("1. ") and shown[1].startswith("2. ")


def test_a_long_id_in_a_table_wraps_after_its_separators_and_shows_whole_on_hover():
    name = "photos/sample_0_seed-0123456789-seed-0123456789-end0.png"
    assert breakable(name) == ("photos/<wbr>sample_<wbr>0_<wbr>seed-<wbr>0123456789-<wbr>seed-<wbr>0123456789-"
                               "<wbr>end0.<wbr>png")
    html = table(["image", "score"], [[name, 0.5], ["short", 0.25]])
    assert f'<td class="long" title="{name}">photos/<wbr>' in html and "<td>short</td>" in html
    assert breakable("<b>" + "x" * 30) == "&lt;b&gt;" + "x" * 30  # escaped, and no boundary to break at


def test_one_dot_and_interval_drawing_with_a_note_beside_each_row():
    rows = [{"label": "b − a", "value": 0.2, "low": 0.05, "high": 0.3},
            {"label": "c − a", "value": -0.1, "low": None, "high": None},
            {"label": "c − b", "value": None, "low": None, "high": None}]
    notes = ["n=40  p=0.01", "n=38  p=0.4", "n=0  p=n/a"]
    fig = interval_figure(rows, xlabel="difference (b − a)", ylabel="pair", zero_line=True, notes=notes,
                          notes_title="n, p")
    ax = fig.axes[0]
    dots = [line for line in ax.lines if line.get_marker() == "o"]
    spans = [line for line in ax.lines if line.get_marker() != "o" and len(line.get_xdata()) == 2
             and line.get_linestyle() == "-"]
    assert len(dots) == 2 and len(spans) == 1  # the row without a value says so; no interval, no line
    texts = [t.get_text() for t in ax.texts]
    assert all(note in texts for note in notes) and "n, p" in texts and "nothing scored" in texts
    at = dict(zip(ax.get_yticks(), (t.get_text() for t in ax.get_yticklabels())))
    assert [at[y] for y in sorted(at, reverse=True)] == ["b − a", "c − a", "c − b"]  # the first row on top
