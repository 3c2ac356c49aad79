"""The shared report page (vlmjudge.reports.page, vlmjudge.reports.figures) and each method's report
over tiny runs: number formatting, legible heatmap labels, empty states, the summary first,
low-resolution marks, report.html at the top of --out."""
import json
import math

import pytest
from report_inputs import METHODS, TINY_SCORE, make_report, terravis_run

from vlmjudge.reports.figures import heatmap, label_color, new_figure
from vlmjudge.reports.page import NOTHING_SCORED, fmt_cell, fmt_number, low_res_note, page, summary_table
from vlmjudge.text import format_score


@pytest.mark.parametrize("value, shown", [
    (1.2e-4, "0.0001200"), (0.367879441, "0.3679"), (1.0, "1.000"), (0.5, "0.5000"), (62.5, "62.50"),
    (71.53, "71.53"), (12345.6, "12346"), (3.4e-7, "3.400e-07"), (0.0, "0.000"), (-0.0, "0.000"), (7, "7"),
    (None, "n/a"), (math.nan, "n/a"), (math.inf, "∞"), (True, "yes"),
])
def test_numbers_keep_four_significant_digits_as_every_printed_score(value, shown):
    assert fmt_number(value) == shown
    if isinstance(value, float) and math.isfinite(value):
        assert fmt_number(value) == format_score(value)


def test_a_small_score_never_shows_as_zero():
    for value in (1.2e-4, 3e-5, 9.99e-9):
        assert float(fmt_number(value)) == pytest.approx(value, rel=5e-3)
        assert fmt_number(value).strip("0.") != ""


def test_cells_escape_text():
    assert fmt_cell("<b>x</b>") == "&lt;b&gt;x&lt;/b&gt;" and fmt_cell(2.5) == "2.500"


def test_label_colour_is_white_on_dark_and_black_on_light():
    assert label_color((0.40, 0.0, 0.05)) == "white"  # dark red
    assert label_color((0.0, 0.0, 0.0)) == "white"
    assert label_color((1.0, 0.96, 0.94)) == "black"  # the lightest of Reds
    assert label_color((1.0, 1.0, 0.6)) == "black"


def test_heatmap_labels_follow_their_cell_and_an_all_zero_grid_keeps_a_unit_scale():
    fig = new_figure(3, 3)
    ax = fig.subplots()
    heatmap(ax, [[0.0, 50.0], [100.0, 10.0]], colorbar="%", label=lambda v: f"{v:.0f}")
    colours = {t.get_text(): t.get_color() for t in ax.texts}
    assert colours["100"] == "white" and colours["0"] == "black"
    zeros = heatmap(new_figure(3, 3).subplots(), [[0.0, 0.0]], colorbar="images")
    assert zeros.norm.vmax == 1.0  # not a colourbar scaled to 1e-9


def test_page_puts_the_summary_before_everything_else():
    html = page("X report", summary_table(["images", "mean score"], [[3, 1.2e-4]]), ["<h2>Figures</h2>"])
    assert html.index('id="summary"') < html.index("Figures") and "0.00012" in html and "<title>X report" in html


def test_low_resolution_notes_are_found_where_each_method_writes_them():
    assert low_res_note({"resolution_note": "small"}) == "small"
    assert low_res_note({"meta": {"resolution_note": "m"}}) == "m"
    assert low_res_note({"provenance": {"resolution_note": "p"}}) == "p"
    assert low_res_note({"meta": {}}) is None


@pytest.mark.parametrize("method", sorted(METHODS))
def test_report_with_results_summary_first_figures_and_low_resolution_mark(method, tmp_path):
    out = make_report(method, tmp_path, scored=True)
    html = (out / "report.html").read_text(encoding="utf-8")
    title = METHODS[method][1]
    assert f"<h1>{title}</h1>" in html
    assert html.index('id="summary"') < html.index('id="figures"') < html.index("lowest-scored")
    pictures = [p for p in out.glob("*.png")]
    assert pictures and all(f'src="{p.name}"' in html for p in pictures)
    assert 'class="lowres"' in html
    assert "The 0 lowest" not in html and NOTHING_SCORED not in html
    assert json.loads((out / "summary.json").read_text())  # the data behind the page


@pytest.mark.parametrize("method", sorted(METHODS))
def test_empty_report_says_so_instead_of_empty_plots(method, tmp_path):
    out = make_report(method, tmp_path, scored=False)
    html = (out / "report.html").read_text(encoding="utf-8")
    assert not list(out.glob("*.png")) and "<img" not in html
    assert 'class="empty"' in html and "so there is nothing to plot or rank" in html
    assert "The 0 lowest" not in html and "lowest-scored" in html  # the empty list says why it is empty


def test_tiny_scores_show_with_their_digits(tmp_path):
    out = make_report("viescore2", tmp_path, scored=True)
    html = (out / "report.html").read_text(encoding="utf-8")
    assert fmt_number(TINY_SCORE) in html and "0.000<" not in html


def test_terravis_scored_without_violations_draws_only_the_histogram(tmp_path):
    from terravis.report import write_report
    from terravis.records import load_records, save_records

    run = terravis_run(tmp_path, scored=True)
    records, manifest = load_records(run)
    for r in records:
        r.checks, r.n_major, r.n_minor = [], 0, 0
        r.score = 1.0 if r.score is not None else None
    save_records(run, records, manifest)
    written = write_report([run], tmp_path / "rep")
    assert [p.name for p in written if p.suffix == ".png"] == ["score_histogram.png"]
    html = (tmp_path / "rep" / "report.html").read_text()
    assert "No violation was detected" in html and "The 3 lowest-scored images" in html


@pytest.mark.parametrize("method", sorted(METHODS))
def test_worst_zero_lists_nothing_and_says_nothing_false(method, tmp_path):
    from vlmjudge.cli import main

    build, _ = METHODS[method]
    out = tmp_path / "rep"
    assert main([method, "report", str(build(tmp_path, True)), "--out", str(out), "--worst", "0"]) == 0
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "The 0 lowest" not in html and "None of the" not in html and 'id="figures"' in html
