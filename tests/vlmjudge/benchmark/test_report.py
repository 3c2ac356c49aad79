"""The benchmark's report.html (issue 48, item 4): every part on the page, each figure as SVG and as
PNG at the asked resolution, each model's images for a few prompts, hostile model names and ids
escaped, and a report that fails midway leaves the earlier one."""
from __future__ import annotations

import json
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest
from PIL import Image

from vlmjudge.benchmark import report as report_module
from vlmjudge.benchmark.leaderboard import build_leaderboard
from vlmjudge.benchmark.leaderboard_runs import LeaderboardError
from vlmjudge.benchmark.report import write_benchmark_report

#: Names no page may show as markup, nor a figure read as mathtext.
HOSTILE_MODEL = '<script>alert("m")</script>'
HOSTILE_ID = '<img src=x onerror="alert(1)">'
PARTS = ("summary", "metrics", "mean-rank", "agreement", "categories", "missing", "images")


@pytest.fixture
def hostile(make_runs, suite_of):
    ids = [HOSTILE_ID, "p&1", "p2", "p3"]
    models = {HOSTILE_MODEL: 0.5, "$cost$ model": 0.4, "plain": 0.3}
    runs = make_runs({name: {"terravis": {i: base + 0.05 * k for k, i in enumerate(ids)},
                             "viescore2": {i: 10 * base - 0.3 * k for k, i in enumerate(ids)}}
                      for name, base in models.items()}, images=True)
    suite = suite_of(ids)
    return runs, suite, build_leaderboard(runs, suite, n_resamples=40)


def test_the_page_holds_every_part_and_every_figure_as_svg_and_png(hostile, tmp_path):
    runs, suite, board = hostile
    written = write_benchmark_report(board, runs, suite, tmp_path / "out", dpi=40)
    names = sorted(p.relative_to(tmp_path / "out").as_posix() for p in written)
    stems = ["category_1", "category_2", "interval_1", "interval_2", "mean_rank", "ranking_agreement"]
    assert names == sorted([f"figures/{s}.{ext}" for s in stems for ext in ("png", "svg")] + ["report.html"])
    html = (tmp_path / "out" / "report.html").read_text()
    for part in PARTS:
        assert f'id="{part}"' in html, part
    for stem in stems:
        assert f'src="figures/{stem}.png"' in html and f'href="figures/{stem}.svg"' in html
        assert ElementTree.parse(tmp_path / "out" / "figures" / f"{stem}.svg").getroot().tag.endswith("svg")
    assert not [p for p in (tmp_path / "out").iterdir() if p.name.startswith(".")]  # no staging left behind


def test_hostile_model_names_and_ids_are_escaped(hostile, tmp_path):
    runs, suite, board = hostile
    write_benchmark_report(board, runs, suite, tmp_path, dpi=30)
    html = (tmp_path / "report.html").read_text()
    assert "<script>" not in html and "&lt;script&gt;alert(&quot;m&quot;)&lt;/script&gt;" in html
    assert "<img src=x" not in html and "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in html
    assert "p&1" not in html and "p&amp;1" in html


def test_every_model_shows_its_images_for_the_first_prompts(hostile, tmp_path):
    runs, suite, board = hostile
    write_benchmark_report(board, runs, suite, tmp_path, dpi=30)
    images = (tmp_path / "report.html").read_text().split('id="images"')[1]
    assert images.count("data:image/jpeg;base64,") == 3 * 4 and "missing image" not in images


def test_an_image_that_is_gone_is_named_not_broken(hostile, tmp_path):
    runs, suite, board = hostile
    manifest = Path(runs["plain"]["terravis"]).with_name("records.manifest.json")
    for path in Path(json.loads(manifest.read_text())["images"]).iterdir():
        path.unlink()
    write_benchmark_report(board, runs, suite, tmp_path / "out", dpi=30)
    images = (tmp_path / "out" / "report.html").read_text().split('id="images"')[1]
    assert images.count("missing image") == 4 and images.count("data:image/jpeg;base64,") == 2 * 4


def test_png_resolution_follows_dpi(hostile, tmp_path):
    runs, suite, board = hostile
    sizes = {}
    for dpi in (30, 60):
        write_benchmark_report(board, runs, suite, tmp_path / str(dpi), dpi=dpi)
        with Image.open(tmp_path / str(dpi) / "figures" / "mean_rank.png") as image:
            sizes[dpi] = image.size
    assert abs(sizes[60][0] - 2 * sizes[30][0]) <= 2


def test_people_and_left_out_prompts_appear_when_the_board_has_them(make_runs, suite_of, tmp_path):
    ids = ["p0", "p1", "p2", "p3", "p4"]
    runs = make_runs({"A": {"terravis": {i: 0.1 * k for k, i in enumerate(ids)}},
                      "B": {"terravis": {i: 0.2 * k for k, i in enumerate(ids[:4])}}})
    labels = tmp_path / "labels.jsonl"
    labels.write_text("".join(json.dumps({"id": f"{m}/{i}", "human": float(k % 3)}) + "\n"
                              for m in "AB" for k, i in enumerate(ids)))
    board = build_leaderboard(runs, suite_of(ids), n_resamples=30, human=(labels, "labels"))
    write_benchmark_report(board, runs, suite_of(ids), tmp_path / "out", dpi=30)
    html = (tmp_path / "out" / "report.html").read_text()
    assert 'id="human"' in html and "Spearman rho: A" in html
    assert "B lacks 1: p4" in html and "4 of the suite's 5 prompts" in html
    assert "Fewer than two methods rank the models" in html  # one method: no pair of rankings


def test_a_benchmark_of_one_model_has_no_column_repeating_all_models(make_runs, suite_of, tmp_path):
    ids = [f"p{k}" for k in range(5)]
    runs = make_runs({"A": {"terravis": {i: 0.1 * k for k, i in enumerate(ids)}}}, images=True)
    labels = tmp_path / "labels.jsonl"
    labels.write_text("".join(json.dumps({"id": f"A/{i}", "human": float(k % 3)}) + "\n" for k, i in enumerate(ids)))
    board = build_leaderboard(runs, suite_of(ids), n_resamples=30, human=(labels, "labels"))
    write_benchmark_report(board, runs, suite_of(ids), tmp_path / "out", dpi=30)
    human = (tmp_path / "out" / "report.html").read_text().split('id="human"')[1]
    assert "Spearman rho, all models" in human and "Spearman rho: A" not in human


def test_a_report_that_fails_midway_leaves_the_earlier_one(hostile, tmp_path, monkeypatch):
    runs, suite, board = hostile
    write_benchmark_report(board, runs, suite, tmp_path, dpi=30)
    before = {p.relative_to(tmp_path): p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}

    def broken(*args, **kwargs):
        raise RuntimeError("the heatmap failed")

    monkeypatch.setattr(report_module, "category_heatmap", broken)
    with pytest.raises(RuntimeError, match="heatmap failed"):
        write_benchmark_report(board, runs, suite, tmp_path, dpi=45)
    assert {p.relative_to(tmp_path): p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == before


@pytest.mark.parametrize("bad", [{"dpi": 0}, {"dpi": 5000}, {"dpi": 72.5}, {"dpi": True}])
def test_a_bad_dpi_is_one_line(hostile, tmp_path, bad):
    runs, suite, board = hostile
    with pytest.raises(LeaderboardError, match="dpi"):
        write_benchmark_report(board, runs, suite, tmp_path, **bad)
    assert not (tmp_path / "report.html").exists()


def test_a_board_that_is_not_a_leaderboard_is_one_line(hostile, tmp_path):
    runs, suite, _ = hostile
    with pytest.raises(LeaderboardError, match="build_leaderboard"):
        write_benchmark_report({"rows": []}, runs, suite, tmp_path)


def test_runs_that_lack_a_model_of_the_board_are_one_line(hostile, tmp_path):
    runs, suite, board = hostile
    with pytest.raises(LeaderboardError, match="missing: plain"):
        write_benchmark_report(board, {m: r for m, r in runs.items() if m != "plain"}, suite, tmp_path)
