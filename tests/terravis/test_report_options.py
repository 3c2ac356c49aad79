"""`terravis report` options of issue 24 item 7: detection agreement says when it is skipped and can
take its human labels from a rating threshold; the style split is reachable from the CLI."""
import json

import pytest

from terravis import style
from terravis.report import ReportError, build_report, load_runs, read_human_csv
from vlmjudge.cli import main

from tvf_helpers import three_models, write_run

# Three annotators per image. m1/a: all 5 (clean); m2/a: 3, 4, 5 (two of three below 5: a violation);
# m2/b: 4, N/A, N/A (one of three below 5: not a positive, the missing labels count against);
# m3/a: 2, 2, 3 (a violation).
RATINGS = {"m1/a.png": ["5", "5", "5"], "m2/a.png": ["3", "4", "5"], "m2/b.png": ["4", "NA", "NA"],
           "m3/a.png": ["2", "2", "3"]}


def human_csv(tmp_path, with_labels=False):
    path = tmp_path / "human.csv"
    lines = ["image_id,rating" + (",has_violation" if with_labels else "")]
    for image_id, ratings in RATINGS.items():
        lines += [f"{image_id},{r}" + (",1" if with_labels else "") for r in ratings]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_detection_is_skipped_with_a_reason_without_labels(tmp_path, capsys):
    run = write_run(tmp_path / "a.jsonl", three_models(tmp_path))
    assert main(["terravis", "report", str(run), "--out", str(tmp_path / "rep"), "--human",
                 str(human_csv(tmp_path))]) == 0
    printed = capsys.readouterr().out
    assert "note: detection precision/recall skipped: the human CSV has no has_violation column" in printed
    (ev,) = json.loads((tmp_path / "rep" / "summary.json").read_text())["evaluators"]
    assert "detection" not in ev["human"] and "--violation-below" in ev["human"]["detection_skipped"]
    assert "no has_violation column" in (tmp_path / "rep" / "report.html").read_text()


def test_labels_from_a_rating_threshold(tmp_path, capsys):
    """Reference positives are images a majority of the annotators (2 of 3, paper Appendix, Table A1)
    rate below 5: m2/a and m3/a. TerraVis flags m2/a and m3/a (m1/a and m2/b are clean): tp 2, tn 2."""
    run = write_run(tmp_path / "a.jsonl", three_models(tmp_path))
    human = read_human_csv(human_csv(tmp_path, with_labels=True), violation_below=5)
    assert human.labels["m2/b.png"] == [True, None, None] and human.label_source == "rating < 5"
    (ev,) = build_report(load_runs([run]), "folder", human)["evaluators"]
    det = ev["human"]["detection"]
    assert (det["tp"], det["fp"], det["fn"], det["tn"]) == (2, 0, 0, 2)
    assert det["precision"] == 1.0 and det["recall"] == 1.0 and det["label_source"] == "rating < 5"
    assert main(["terravis", "report", str(run), "--out", str(tmp_path / "rep"), "--human",
                 str(human_csv(tmp_path)), "--violation-below", "4"]) == 0
    assert "note:" not in capsys.readouterr().out
    (ev,) = json.loads((tmp_path / "rep" / "summary.json").read_text())["evaluators"]
    # below 4: only m3/a is a positive (2, 2, 3); m2/a (3, 4, 5) has one of three -> fp
    det = ev["human"]["detection"]
    assert (det["tp"], det["fp"], det["fn"], det["tn"]) == (1, 1, 0, 2)
    with pytest.raises(ReportError, match="violation_below"):
        read_human_csv(human_csv(tmp_path), violation_below=1)


class FakeSigLIP:
    """Stands in for the SigLIP classifier: 'stylized' for images under m3/, else 'photorealistic'."""

    made = []

    def __init__(self, model):
        FakeSigLIP.made.append(model)

    def __call__(self, images):
        return ["stylized" if img.getpixel((0, 0)) == (0, 0, 255) else "photorealistic" for img in images]


def test_style_split_from_the_cli(tmp_path, monkeypatch, capsys):
    from PIL import Image

    records = three_models(tmp_path)
    Image.new("RGB", (40, 30), "blue").save(records[3].meta["path"])  # m3/a: "stylized"
    run = write_run(tmp_path / "a.jsonl", records)
    monkeypatch.setattr(style, "SigLIPStyleClassifier", FakeSigLIP)
    args = ["terravis", "report", str(run), "--out", str(tmp_path / "rep"), "--human", str(human_csv(tmp_path))]
    assert main(args + ["--classify-styles"]) == 0
    assert FakeSigLIP.made[-1] == style.DEFAULT_MODEL
    (ev,) = json.loads((tmp_path / "rep" / "summary.json").read_text())["evaluators"]
    split = ev["human"]["style_split"]
    # m2/b is human N/A (two of three annotators chose N/A), so two photorealistic pairs remain
    assert split["stylized"]["n"] == 1 and split["photorealistic"]["n"] == 2
    assert main(args + ["--classify-styles", "local/siglip"]) == 0 and FakeSigLIP.made[-1] == "local/siglip"
    assert main(["terravis", "report", str(run), "--out", str(tmp_path / "rep"), "--classify-styles"]) == 2
    assert "give --human" in capsys.readouterr().err
