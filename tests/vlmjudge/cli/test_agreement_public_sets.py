"""`vlmjudge agreement --human-format SET`: a public set measured as its authors measure it
(T2IScoreScore's per-graph ordering and separation beside the pooled Spearman, on the release's
own rows in the published layout), no -0.0 anywhere it writes, and a join by image path that says
so when nothing meets."""
import csv
import json
from pathlib import Path

import numpy as np
import pytest

from vlmjudge.cli import main
from vlmjudge.outputs import write_jsonl, write_manifest
from vlmjudge.reports import agreement as agreement_page
from vlmjudge.reports.agreement import write_agreement_report

DATA = Path(__file__).resolve().parents[2] / "data"
RELEASE = DATA / "t2iscorescore_release"
FAST = ["--resamples", "200"]


def release_run(tmp_path: Path, metric: str) -> str:
    """A run holding the release's scores of `metric`, one record of the shared schema per image path
    (failed, without a score, where the release has none)."""
    with (RELEASE / "scores.csv").open(newline="") as handle:
        records = [{"id": row["file_name"], "status": "scored" if row[metric] else "failed",
                    "score": float(row[metric]) if row[metric] else None} for row in csv.DictReader(handle)]
    path = tmp_path / f"{metric}.jsonl"
    write_jsonl(path, records)
    write_manifest(path, {"method": None, "model": metric})
    return str(path)


def published_means(metric: str) -> dict[str, float]:
    """The mean over graphs of the authors' per-graph ordering and separation of `metric`."""
    with (RELEASE / "metametrics.csv").open(newline="") as handle:
        rows = [row for row in csv.DictReader(handle) if row["metric"] == metric]
    return {"ordering": np.mean([float(row["spearman"]) for row in rows]),
            "separation": np.mean([float(row["ks_test"]) for row in rows])}


def negative_zeros(text: str) -> list[float]:
    """Every -0.0 a JSON text holds."""
    found = []
    json.loads(text, parse_float=lambda s: found.append(float(s)) or float(s))
    return [value for value in found if value == 0 and str(value).startswith("-")]


def test_t2iscorescore_reports_the_per_graph_average_beside_the_pooled_spearman(tmp_path, capsys):
    runs = [release_run(tmp_path, "clipscore"), release_run(tmp_path, "llava_tifa")]
    out = tmp_path / "report"
    assert main(["agreement", *runs, str(RELEASE / "metadata.csv"), "--human-format", "t2iscorescore",
                 "--out", str(out), *FAST]) == 0
    result = json.loads((out / "agreement.json").read_text(encoding="utf-8"))
    for run, metric in zip(result["runs"], ("clipscore", "llava_tifa")):
        own = run["set_statistics"]
        assert own["name"] == "T2IScoreScore" and own["graphs"] == 6 and own["beside"] == "spearman"
        for name, mean in published_means(metric).items():
            assert own["measures"][name]["mean"] == pytest.approx(mean, abs=1e-12)
            assert own["measures"][name]["low"] <= mean <= own["measures"][name]["high"]
        pooled = run["statistics"]["spearman"]["value"]
        assert abs(pooled - own["measures"]["ordering"]["mean"]) > 0.01  # two different numbers, both shown
    assert result["runs"][1]["unscored"] == ["images/164-04.jpg"]
    printed = capsys.readouterr().out
    assert "clipscore: T2IScoreScore's own statistics, means over graphs: ordering " in printed
    assert f"pooled spearman {result['runs'][0]['statistics']['spearman']['value']:.3f} over 129 items" in printed
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "T2IScoreScore&#x27;s own statistics" in page and "ordering, mean over graphs" in page
    assert "Spearman rho, pooled (items)" in page


def test_no_negative_zero_in_what_the_agreement_report_writes(tmp_path, monkeypatch):
    """Minus the error count of an image without error is 0.0 in the JSON; a page given a -0.0
    writes 0 (the scatter's title included)."""
    run = release_run(tmp_path, "clipscore")
    out = tmp_path / "report"
    assert main(["agreement", run, str(RELEASE), "--human-format", "t2iscorescore", "--out", str(out), *FAST]) == 0
    text = (out / "agreement.json").read_text(encoding="utf-8")
    items = json.loads(text)["runs"][0]["items"]
    assert sum(item["human"] == 0 for item in items) >= 20
    assert negative_zeros(text) == []
    result = json.loads(text)
    result["runs"][0]["statistics"]["spearman"]["value"] = -0.0  # a writer given one writes none
    titles = []
    monkeypatch.setattr(agreement_page, "title_lines", lambda text, width: titles.append(text) or text)
    page = write_agreement_report(result, tmp_path / "page").read_text(encoding="utf-8")
    assert titles == ["clipscore: Spearman rho 0.000, 129 items"]
    assert "<td>0.000 [" in page and "-0.000" not in page  # four significant digits, as every printed score


@pytest.mark.parametrize("fmt, human, ids, compared", [
    ("t2iscorescore", RELEASE, ("000-00.jpg", "000-01.jpg"), "an image path of the t2iscorescore file"),
    ("tifa", DATA / "human_sets" / "tifa", ("coco_1", "coco_2"), "an image path of the tifa file"),
])
def test_ids_that_do_not_meet_name_the_join_by_image_path(tmp_path, capsys, fmt, human, ids, compared):
    path = tmp_path / "run.jsonl"
    write_jsonl(path, [{"id": key, "status": "scored", "score": 0.5} for key in ids])
    write_manifest(path, {"method": None, "model": "judge"})
    assert main(["agreement", str(path), str(human), "--human-format", fmt, "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("vlmjudge: error: no record id of ")
    assert compared in err and "joined by the image path inside the set's download, not by its row ids" in err
    assert f"record ids: {ids[0]}, {ids[1]}" in err
    example = "images/002-00.jpg" if fmt == "t2iscorescore" else "coco_"
    assert f"image paths: {example}" in err


def test_labels_that_do_not_meet_name_label_ids(tmp_path, capsys):
    path = tmp_path / "run.jsonl"
    write_jsonl(path, [{"id": "a.png", "status": "scored", "score": 0.5},
                       {"id": "b.png", "status": "scored", "score": 0.1}])
    write_manifest(path, {"method": None, "model": "judge"})
    labels = tmp_path / "labels.jsonl"
    labels.write_text('{"id": "x.png", "human": 1}\n{"id": "y.png", "human": 2}\n', encoding="utf-8")
    assert main(["agreement", str(path), str(labels), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert "matches a label id of" in err and "record ids: a.png, b.png; label ids: x.png, y.png" in err
