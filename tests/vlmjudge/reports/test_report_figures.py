"""Every report's figures fit for a paper or a slide (issue 52, item 2): each figure as SVG beside
its PNG, `--dpi` on every report command, no series drawn twice, a leaderboard plot with
intervals, a forest plot with n and p, and long names shortened with the full name on hover."""
import json
import xml.etree.ElementTree as ElementTree

import numpy as np
import pytest
from PIL import Image
from report_inputs import METHODS, terravis_run

import vlmjudge
from vlmjudge.cli import main
from vlmjudge.outputs import write_jsonl, write_manifest
from vlmjudge.reports.page import fmt_number

SVG = "{http://www.w3.org/2000/svg}"
#: A T2I model name without a boundary to wrap at: its tick label is shortened.
LONG_MODEL = "diffusionmodelcheckpoint" * 3 + "v2"


def svg_texts(path):
    return ["".join(t.itertext()) for t in ElementTree.parse(path).getroot().iter(f"{SVG}text")]


def hover_titles(path):
    return ["".join(t.itertext()) for t in ElementTree.parse(path).getroot().iter(f"{SVG}title")]


def report(method, folder, *flags):
    build, _ = METHODS[method]
    folder.mkdir(parents=True, exist_ok=True)
    out = folder / "report"
    assert main([method, "report", str(build(folder, True)), "--out", str(out), *flags]) == 0
    return out


@pytest.mark.parametrize("method", sorted(METHODS))
def test_every_method_report_writes_each_figure_as_svg_and_png_at_the_asked_dpi(method, tmp_path, capsys):
    widths = {}
    for dpi in (60, 120):
        out = report(method, tmp_path / str(dpi), "--dpi", str(dpi))
        pngs = sorted(out.glob("*.png"))
        assert pngs and sorted(out.glob("*.svg")) == [p.with_suffix(".svg") for p in pngs]
        html = (out / "report.html").read_text(encoding="utf-8")
        printed = capsys.readouterr().out
        for png in pngs:
            assert f'src="{png.name}"' in html and f'href="{png.stem}.svg"' in html
            assert ElementTree.parse(png.with_suffix(".svg")).getroot().tag == f"{SVG}svg"
            assert f"wrote {png.with_suffix('.svg')}" in printed
        with Image.open(pngs[0]) as image:
            widths[dpi] = image.size[0]
    assert abs(widths[120] - 2 * widths[60]) <= 2


def test_a_terravis_report_writes_svg_figures_with_labelled_axes(tmp_path):
    out = report("terravis", tmp_path)
    for stem, words in (("violations_by_level", ["share of the detected violations (%)", "T2I model (n violations)"]),
                        ("violations_by_type", ["T2I model", "% of the model's violations"]),
                        ("score_histogram", ["TerraVis score (0-1, higher is better)", "images"])):
        texts = svg_texts(out / f"{stem}.svg")
        assert all(word in texts for word in words), (stem, texts)


@pytest.mark.parametrize("argv", [["terravis", "report", "x.jsonl"], ["viescore2", "report", "x.jsonl"],
                                  ["fager", "report", "run"], ["regeneration", "report", "x.json"],
                                  ["compare", "a.jsonl", "b.jsonl"], ["agreement", "a.jsonl", "labels.jsonl"]])
@pytest.mark.parametrize("dpi", ["0", "2000", "72.5", "high"])
def test_a_bad_dpi_is_refused_before_anything_is_read(argv, dpi, tmp_path, capsys):
    with pytest.raises(SystemExit) as stop:
        main([*argv, "--out", str(tmp_path / "out"), "--dpi", dpi])
    assert stop.value.code == 2 and not (tmp_path / "out").exists()
    assert f"--dpi: must be a whole number from 10 to 1200, got '{dpi}'" in capsys.readouterr().err


def terravis_board(tmp_path, models):
    """`build_report` data over the terravis test run, its images grouped into `models`."""
    from terravis.report import build_report, load_runs

    evaluators = load_runs([terravis_run(tmp_path)])
    for k, record in enumerate(evaluators[0].records):
        record.meta["model"] = models[k % len(models)]
    return build_report(evaluators, "field")


def test_one_t2i_model_is_drawn_once_not_again_as_all_models(tmp_path):
    from terravis.figures import level_shares_figure, type_shares_figure

    for models, rows in ((["only"], ["only (n=3)"]), (["m1", "m2"], ["all models (n=3)", "m1 (n=2)", "m2 (n=1)"])):
        data = terravis_board(tmp_path / str(len(models)), models)
        bars = level_shares_figure(data["evaluators"]).axes[0]
        assert [t.get_text() for t in bars.get_yticklabels()] == rows
        heat = type_shares_figure(data["evaluators"]).axes[0]
        assert [t.get_text() for t in heat.get_xticklabels()] == [row.split(" (")[0] for row in rows]


def test_one_t2i_model_has_no_agreement_row_repeating_the_pooled_one(tmp_path):
    run = terravis_run(tmp_path)
    ratings = tmp_path / "ratings.csv"
    ids = [json.loads(line)["id"] for line in run.read_text().splitlines()]
    ratings.write_text("image_id,rating\n" + "".join(f"{i},{1 + k}\n" for k, i in enumerate(ids)))
    for group_by, groups in (("folder", ["m1", "m2"]), ("auto", [])):
        out = tmp_path / group_by
        if group_by == "auto":  # every image under one model: the records name it
            records = [dict(json.loads(line), meta={"model": "only"}) for line in run.read_text().splitlines()]
            write_jsonl(run, records)
        assert main(["terravis", "report", str(run), "--out", str(out), "--human", str(ratings),
                     "--group-by", group_by]) == 0
        agreement = (out / "report.html").read_text().split("Agreement with human ratings")[1].split("</table>")[0]
        assert agreement.count("<tr>") == 2 + len(groups)  # the header, pooled, then one row per model when several
        assert all(f"<td>{g}</td>" in agreement for g in groups) and "<td>only</td>" not in agreement


def fager_runs(n_items=12):
    rng = np.random.default_rng(3)
    return [[{"id": f"img-{k}", "status": "scored", "score": float(np.clip(50 + shift + rng.normal(0, 15), 0, 100))}
             for k in range(n_items)] for shift in (0.0, 8.0, -3.0)]


@pytest.fixture
def comparison():
    return vlmjudge.compare(fager_runs(), labels=["first", "second", LONG_MODEL], method="fager", n_resamples=200)


def test_the_comparison_draws_its_leaderboard_with_intervals_as_the_benchmark_does(comparison, tmp_path):
    from vlmjudge.benchmark import report_figures
    from vlmjudge.reports import intervals
    from vlmjudge.reports.comparison import write_comparison

    written = write_comparison(comparison, tmp_path, dpi=40)
    assert [p.name for p in written] == ["comparison.json", "leaderboard.png", "leaderboard.svg", "forest.png",
                                         "forest.svg", "report.html"]
    texts = svg_texts(tmp_path / "leaderboard.svg")
    for row in comparison["leaderboard"]:
        assert f"n={row['n']}  rank {row['rank_low']}–{row['rank_high']}" in texts
    assert "first" in texts and "second" in texts and LONG_MODEL not in texts
    assert hover_titles(tmp_path / "leaderboard.svg") == [LONG_MODEL]  # shortened, whole on hover
    html = (tmp_path / "report.html").read_text()
    assert html.index('id="leaderboard"') < html.index('id="pairwise"') and 'href="leaderboard.svg"' in html
    assert report_figures.draw_intervals is intervals.interval_plot  # the benchmark's leaderboard: the same drawing


def test_the_forest_plot_shows_each_pairs_n_and_p(comparison, tmp_path):
    from vlmjudge.reports.comparison import write_comparison

    write_comparison(comparison, tmp_path, dpi=40)
    texts = svg_texts(tmp_path / "forest.svg")
    for pair in comparison["pairwise"]:
        note = f"n={pair['n']}  p={fmt_number(pair['p_value'])}  Holm p={fmt_number(pair['p_holm'])}"
        assert note in texts, (note, texts)


def test_compare_and_agreement_take_dpi_and_write_svg(tmp_path):
    paths = []
    for k, records in enumerate(fager_runs()[:2]):
        path = tmp_path / f"run{k}" / "records.jsonl"
        write_jsonl(path, records)
        write_manifest(path, {"method": "fager", "model": "judge"})
        paths.append(str(path))
    assert main(["compare", *paths, "--out", str(tmp_path / "cmp"), "--resamples", "100", "--dpi", "50"]) == 0
    labels = tmp_path / "labels.jsonl"
    labels.write_text("".join(json.dumps({"id": f"img-{k}", "human": float(k % 5)}) + "\n" for k in range(12)))
    generic = tmp_path / "generic.jsonl"
    write_jsonl(generic, fager_runs()[0])
    write_manifest(generic, {"model": "judge"})
    assert main(["agreement", str(generic), str(labels), "--out", str(tmp_path / "agr"), "--resamples", "100",
                 "--dpi", "50"]) == 0
    for folder, stem in (("cmp", "forest"), ("cmp", "leaderboard"), ("agr", "scatter_1_judge")):
        with Image.open(tmp_path / folder / f"{stem}.png") as image:
            assert image.info["dpi"][0] == pytest.approx(50, abs=0.1)
        assert (tmp_path / folder / f"{stem}.svg").is_file()
        assert f'href="{stem}.svg"' in (tmp_path / folder / "report.html").read_text()
