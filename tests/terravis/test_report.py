"""The report over saved records (no model): grouping by T2I model, rankings, agreement
between evaluators, human data, and clear errors on bad input."""
import csv
import json

import pytest

from terravis.report import ReportError, build_report, load_runs, model_of, read_human_csv
from vlmjudge.cli import main

from tvf_helpers import annotated, three_models, write_run


def test_model_of_field_folder_and_auto():
    r = annotated("x/y/z.png", model="sdxl", path="/data/flux/z.png")
    assert model_of(r, "field") == "sdxl" and model_of(r, "folder") == "flux" and model_of(r, "auto") == "sdxl"
    bare = annotated("x/y/z.png")
    assert model_of(bare, "auto") == "y"
    with pytest.raises(ReportError, match="no 'model' field"):
        model_of(bare, "field")


def test_rankings_and_shares_by_folder(tmp_path):
    run = write_run(tmp_path / "a.jsonl", three_models(tmp_path))
    (ev,) = build_report(load_runs([run]), "folder")["evaluators"]
    e = 2.718281828459045
    assert ev["model_means"] == pytest.approx({"m1": 1.0, "m2": (1 / e + 1) / 2, "m3": 1 / e})
    assert [(r["rank"], r["model"]) for r in ev["ranking"]] == [(1, "m1"), (2, "m2"), (3, "m3")]
    assert ev["models"]["m3"]["n_not_applicable"] == 1 and ev["models"]["m3"]["na_rate"] == 0.5
    assert ev["summary"]["level_counts"] == {"object": 1, "interaction": 2, "scene": 0}


def test_report_command_writes_everything_and_escapes_evidence(tmp_path, capsys):
    run = write_run(tmp_path / "a.jsonl", three_models(tmp_path))
    assert main(["terravis", "report", str(run), "--out", str(tmp_path / "rep"), "--worst", "2"]) == 0
    printed = capsys.readouterr().out
    for name in ("summary.json", "ranking.csv", "violations_by_level.png", "violations_by_type.png",
                 "score_histogram.png", "report.html"):
        assert f"wrote {tmp_path / 'rep' / name}" in printed
    page = (tmp_path / "rep" / "report.html").read_text()
    assert page.count("<div class=\"card\">") == 2  # --worst 2: m2/a (1/e) and m3/a (1/e, more violations first)
    assert page.index("m3/a.png") < page.index("m2/a.png")
    assert "Six &lt;b&gt;fingers&lt;/b&gt;." in page and "<b>fingers</b>" not in page
    assert page.count("data:image/jpeg;base64,") == 2
    rows = list(csv.reader(open(tmp_path / "rep" / "ranking.csv")))
    assert rows[0][:3] == ["evaluator", "rank", "model"] and [r[2] for r in rows[1:]] == ["m1", "m2", "m3"]


def test_missing_image_is_reported_not_fatal(tmp_path):
    records = [annotated("m1/x.png", path=str(tmp_path / "nowhere.png"),
                         violations=[("optical_effect", "minor", "No shadow.")])]
    run = write_run(tmp_path / "a.jsonl", records)
    assert main(["terravis", "report", str(run), "--out", str(tmp_path / "rep")]) == 0
    page = (tmp_path / "rep" / "report.html").read_text()
    assert "missing image" in page and "m1/x.png" in page


def test_two_evaluators_give_ranking_agreement(tmp_path):
    def run(name, scores_by_model, judge):
        records = []
        for model, n_minor in scores_by_model.items():
            kinds = ["support_stability", "optical_effect", "contact_state"][:n_minor]
            records.append(annotated(f"{model}.png", model=model, violations=[(t, "minor", "x") for t in kinds]))
        return write_run(tmp_path / name, records, model=judge)
    a = run("a.jsonl", {"m1": 0, "m2": 1, "m3": 2}, "judge-A")
    b = run("b.jsonl", {"m1": 0, "m2": 3, "m3": 2}, "judge-B")
    data = build_report(load_runs([a, b]))
    assert [e["label"] for e in data["evaluators"]] == ["judge-A", "judge-B"]
    # m1 > m2 > m3 vs m1 > m3 > m2: two concordant pairs, one discordant -> tau = 1/3
    (pair,) = data["ranking_agreement"]["pairs"]
    assert (pair["a"], pair["b"], pair["kendall_tau"]) == ("judge-A", "judge-B", pytest.approx(1 / 3))
    assert main(["terravis", "report", str(a), str(b), "--out", str(tmp_path / "rep")]) == 0
    saved = json.loads((tmp_path / "rep" / "summary.json").read_text())
    assert saved["ranking_agreement"]["mean"] == pytest.approx(1 / 3)


def test_same_evaluator_files_are_joined_and_clashes_refused(tmp_path, capsys):
    a = write_run(tmp_path / "a.jsonl", [annotated("m1/a.png")])
    b = write_run(tmp_path / "b.jsonl", [annotated("m2/a.png")])
    (ev,) = load_runs([a, b])
    assert [r.id for r in ev.records] == ["m1/a.png", "m2/a.png"]
    assert main(["terravis", "report", str(a), str(a), "--out", str(tmp_path / "rep")]) == 2
    assert "already in another run" in capsys.readouterr().err


def test_human_csv_reading_and_errors(tmp_path, capsys):
    good = tmp_path / "h.csv"
    good.write_text("image_id,rating,has_violation,style\na,4,0,photo\na,NA,,photo\na,5,no,photo\nb,2,yes,\n")
    data = read_human_csv(good)
    assert data.ratings == {"a": [4.0, None, 5.0], "b": [2.0]}
    assert data.labels == {"a": [False, None, False], "b": [True]} and data.styles == {"a": "photo"}
    cases = (("image_id,score\na,3\n", "needs columns"), ("image_id,rating\na,7\n", "outside 1..5"),
             ("image_id,rating\na,good\n", "neither a number"), ("image_id,rating\n,3\n", "empty image_id"))
    for text, message in cases:
        bad = tmp_path / "bad.csv"
        bad.write_text(text)
        with pytest.raises(ReportError, match=message):
            read_human_csv(bad)
    run = write_run(tmp_path / "a.jsonl", [annotated("m1/a.png")])
    assert main(["terravis", "report", str(run), "--out", str(tmp_path / "rep"), "--human", str(bad)]) == 2
    assert "empty image_id" in capsys.readouterr().err
    unmatched = tmp_path / "u.csv"
    unmatched.write_text("image_id,rating\nzzz,3\n")
    assert main(["terravis", "report", str(run), "--out", str(tmp_path / "rep"), "--human", str(unmatched)]) == 2
    assert "no record's id appears" in capsys.readouterr().err


def test_score_refuses_missing_inputs(tmp_path, capsys):
    assert main(["terravis", "score", str(tmp_path / "nope"), "--model", "x", "--out", str(tmp_path / "r.jsonl")]) == 2
    assert "no such image file or folder" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert main(["terravis", "score", str(tmp_path / "empty"), "--model", "x", "--out", str(tmp_path / "r.jsonl")]) == 2
    assert "no image files" in capsys.readouterr().err
