"""`vlmjudge agreement`: runs written as the scoring commands write them (records, manifest beside),
labels as the annotation app writes them; which judge agrees best, unmatched ids, the human
ceiling, a public set as HUMAN, and one-line errors with exit status 2 on bad input."""
import json
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as scipy_stats

from vlmjudge.cli import main
from vlmjudge.outputs import write_jsonl, write_manifest

DATA = Path(__file__).resolve().parents[2] / "data" / "human_sets"
FAST = ["--resamples", "300"]


def schema_record(record):
    """A record of the shared schema (`vlmjudge.record_schema`): id, status, score first."""
    status = record.get("status") or ("scored" if record.get("score") is not None else "not_applicable")
    rest = {key: value for key, value in record.items() if key not in ("id", "status", "score")}
    return {"id": record["id"], "status": status, "score": record.get("score"), **rest}


def write_run(path, records, model, method=None):
    """A run as the CLI leaves it: records JSONL (each of the shared schema) and the manifest beside it."""
    write_jsonl(path, [schema_record(record) for record in records])
    write_manifest(path, {"method": method, "model": model})
    return str(path)


def write_labels(path, lines):
    """Labels as the annotation app writes them: one JSON object a line."""
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return str(path)


@pytest.fixture
def two_judges(tmp_path):
    """40 images, two annotators, a judge that tracks people and one that mostly guesses."""
    rng = np.random.default_rng(7)
    ids = [f"imgs/{k:02d}.png" for k in range(40)]
    truth = rng.uniform(1, 5, len(ids))
    labels = [{"id": i, "annotator": who, "method": None, "human": float(t + rng.normal(0, 0.3))}
              for i, t in zip(ids, truth) for who in ("ann", "bob")]
    close = [{"id": i, "score": float(t + rng.normal(0, 0.2))} for i, t in zip(ids, truth)]
    loose = [{"id": i, "score": float(t + rng.normal(0, 3.0))} for i, t in zip(ids, truth)]
    return {"close": write_run(tmp_path / "close.jsonl", close, "judge-close"),
            "loose": write_run(tmp_path / "loose.jsonl", loose, "judge-loose"),
            "labels": write_labels(tmp_path / "labels.jsonl", labels), "out": tmp_path / "report",
            "truth": dict(zip(ids, truth)), "close_records": close, "label_lines": labels}


def read_result(out):
    return json.loads((out / "agreement.json").read_text(encoding="utf-8"))


def test_the_judge_that_tracks_people_is_named_best_with_a_paired_interval_above_zero(two_judges, capsys):
    argv = ["agreement", two_judges["loose"], two_judges["close"], two_judges["labels"],
            "--out", str(two_judges["out"]), *FAST]
    assert main(argv) == 0
    result = read_result(two_judges["out"])
    comparison = result["comparison"]
    assert comparison["best"] == "judge-close" and comparison["clear"] is True
    [pair] = comparison["pairs"]
    assert (pair["a"], pair["b"]) == ("judge-loose", "judge-close")
    assert pair["high"] < 0 and pair["diff"] < 0  # loose minus close: the interval lies below 0
    assert "best judge: judge-close, clearly" in capsys.readouterr().out
    page = (two_judges["out"] / "report.html").read_text(encoding="utf-8")
    assert "<strong>judge-close</strong>" in page and "Kendall tau-c" in page
    assert len(list(two_judges["out"].glob("scatter_*.png"))) == 2


def test_the_statistics_are_those_of_the_joined_items(two_judges):
    assert main(["agreement", two_judges["close"], two_judges["labels"], "--out", str(two_judges["out"]), *FAST]) == 0
    [run] = read_result(two_judges["out"])["runs"]
    means = {}
    for line in two_judges["label_lines"]:
        means.setdefault(line["id"], []).append(line["human"])
    judge = [record["score"] for record in two_judges["close_records"]]
    human = [np.mean(means[record["id"]]) for record in two_judges["close_records"]]
    spearman = run["statistics"]["spearman"]
    assert spearman["value"] == pytest.approx(scipy_stats.spearmanr(judge, human).statistic)
    assert spearman["low"] <= spearman["value"] <= spearman["high"]
    assert run["matched"] == 40 and set(run["statistics"]) >= {"pearson", "kendall_tau_c", "pairwise_accuracy"}


def test_two_annotators_give_the_human_ceiling(two_judges):
    assert main(["agreement", two_judges["close"], two_judges["labels"], "--out", str(two_judges["out"]), *FAST]) == 0
    ceiling = read_result(two_judges["out"])["ceiling"]
    by = {}
    for line in two_judges["label_lines"]:
        by.setdefault(line["annotator"], []).append(line["human"])
    expected = scipy_stats.spearmanr(by["ann"], by["bob"]).statistic  # two annotators: each against the other
    assert ceiling["annotators"] == 2 and ceiling["mean"]["spearman"] == pytest.approx(expected)
    assert "Human ceiling" in (two_judges["out"] / "report.html").read_text(encoding="utf-8")


def test_unmatched_ids_are_listed_on_both_sides(tmp_path, capsys):
    records = [{"id": f"{k}.png", "score": float(k)} for k in range(6)] + [{"id": "gone.png", "score": None}]
    labels = [{"id": f"{k}.png", "human": float(k % 4)} for k in range(1, 7)] + [{"id": "gone.png", "human": 2}]
    run = write_run(tmp_path / "run.jsonl", records, "judge")
    assert main(["agreement", run, write_labels(tmp_path / "l.jsonl", labels), "--out", str(tmp_path / "o"),
                 *FAST]) == 0
    [result] = read_result(tmp_path / "o")["runs"]
    assert result["unmatched"] == {"human_only": ["6.png"], "run_only": ["0.png"]}
    assert result["unscored"] == ["gone.png"] and result["matched"] == 5
    err = capsys.readouterr().err
    assert "1 human items with no record: 6.png" in err and "1 records with no human label: 0.png" in err
    assert "6.png" in (tmp_path / "o" / "report.html").read_text(encoding="utf-8")


def test_a_public_set_is_read_as_human(tmp_path):
    rows = json.loads((DATA / "tifa" / "human_annotations.json").read_text())
    records = [{"id": row["image_path"], "score": float(np.mean(row["human_scores"]) + 0.1 * k)}
               for k, row in enumerate(rows.values())]
    reversed_records = [{**record, "score": -record["score"]} for record in records]
    runs = [write_run(tmp_path / "run.jsonl", records, "judge"),
            write_run(tmp_path / "reversed.jsonl", reversed_records, "reversed")]
    out = tmp_path / "o"
    assert main(["agreement", *runs, str(DATA / "tifa"), "--human-format", "tifa", "--out", str(out), *FAST]) == 0
    result = read_result(out)
    assert result["runs"][0]["matched"] == len(rows) and result["human"]["format"] == "tifa"
    assert result["ceiling"]["annotators"] == 2  # TIFA's two raters, by position
    assert result["runs"][0]["items"][0]["group"] == next(iter(rows.values()))["text_id"]  # prompts resample whole
    assert result["comparison"]["best"] == "judge" and result["comparison"]["pairs"][0]["diff"] > 0


@pytest.mark.parametrize("case", ["no_overlap", "one_item", "missing_file", "no_labels", "bad_label", "only_labels"])
def test_bad_inputs_are_one_line_and_exit_2(tmp_path, capsys, case):
    run = write_run(tmp_path / "run.jsonl", [{"id": f"{k}.png", "score": float(k)} for k in range(5)], "judge")
    labels = {"no_overlap": [{"id": "other.png", "human": 1}, {"id": "else.png", "human": 2}],
              "one_item": [{"id": "1.png", "human": 1}, {"id": "x.png", "human": 3}],
              "no_labels": [], "bad_label": [{"id": "1.png", "human": "high"}]}.get(case, [{"id": "1.png", "human": 1}])
    human = write_labels(tmp_path / "labels.jsonl", labels)
    argv = {"missing_file": [str(tmp_path / "nowhere.jsonl"), human], "only_labels": [human]}.get(case, [run, human])
    assert main(["agreement", *argv, "--out", str(tmp_path / "o"), *FAST]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("vlmjudge: error: ") and len(err.splitlines()) == 1, err
    assert not (tmp_path / "o" / "agreement.json").exists()


def terravis_run(tmp_path, name="run.jsonl", lines=None):
    """A TerraVis run of 6 images (score k / 10) with its manifest; `lines` replaces record lines."""
    records = [json.dumps(schema_record({"id": f"{k}.png", "score": k / 10})) for k in range(6)]
    for number, line in (lines or {}).items():
        records[number] = line
    path = tmp_path / name
    path.write_text("".join(line + "\n" for line in records), encoding="utf-8")
    write_manifest(path, {"method": "terravis", "model": "judge"})
    return str(path)


def terravis_and_fager_labels(tmp_path):
    """TerraVis ratings of the 6 images, with FAGER A/B choices mixed in (issue 50, item 2)."""
    lines = [{"id": f"{k}.png", "annotator": "ann", "method": "terravis", "rating": 1 + k % 5} for k in range(6)]
    lines[3:3] = [{"id": f"{k}.png", "annotator": "ann", "method": "fager", "a": "0.png", "b": "1.png",
                   "choice": "A"} for k in (0, 1)]
    return write_labels(tmp_path / "labels.jsonl", lines)


def refused(argv, capsys):
    """The one stderr line of a refused agreement (status 2, no traceback)."""
    assert main(["agreement", *FAST, *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err


def test_labels_of_another_method_are_refused_naming_the_line(tmp_path, capsys):
    run, labels = terravis_run(tmp_path), terravis_and_fager_labels(tmp_path)
    err = refused([run, labels, "--out", str(tmp_path / "o")], capsys)
    assert f"{labels}:4: a fager label, but the runs are terravis's (2 such line(s))" in err
    assert not (tmp_path / "o").exists()


def test_labels_of_another_method_are_left_out_and_counted_when_asked(tmp_path, capsys):
    run, labels = terravis_run(tmp_path), terravis_and_fager_labels(tmp_path)
    out = tmp_path / "o"
    assert main(["agreement", run, labels, "--out", str(out), "--skip-other-labels", *FAST]) == 0
    assert "left out 2 label line(s) of another method than terravis" in capsys.readouterr().err
    result = read_result(out)
    assert result["human"]["other_method_lines_left_out"] == 2 and result["runs"][0]["matched"] == 6
    people = {item["id"]: item["human"] for item in result["runs"][0]["items"]}
    assert people == {f"{k}.png": 1 + k % 5 for k in range(6)}  # no FAGER line became a rating


def test_a_method_the_manifests_contradict_is_refused(tmp_path, capsys):
    run = terravis_run(tmp_path)
    labels = write_labels(tmp_path / "labels.jsonl", [{"id": f"{k}.png", "human": k} for k in range(6)])
    err = refused([run, labels, "--out", str(tmp_path / "o"), "--method", "fager"], capsys)
    assert "--method fager, but the runs' manifests say terravis" in err


@pytest.mark.parametrize("line, words", [
    ('{"id": "2.png", "status": "scored", "score": Infinity}', "Infinity in the line"),
    ('{"id": "2.png", "status": "scored", "score": 1e308}', "outside terravis's score range 0 to 1"),
    ('{"id": "2.png", "status": "weird", "score": 0.5}', "'weird' is not one of"),
    ('{"id": "1.png", "status": "scored", "score": 0.5}', "id '1.png' appears twice"),
    ('{"status": "scored", "score": 0.5}', "has no 'id'"),
])
def test_a_run_is_checked_as_compare_checks_it(tmp_path, capsys, line, words):
    run = terravis_run(tmp_path, lines={2: line})
    labels = write_labels(tmp_path / "labels.jsonl", [{"id": f"{k}.png", "human": k} for k in range(6)])
    err = refused([run, labels, "--out", str(tmp_path / "o")], capsys)
    assert words in err and f"{run}:3" in err


@pytest.mark.parametrize("flags, words", [
    (["--resamples", "0"], "--resamples must lie in 1..100000"), (["--resamples", "100001"], "1..100000"),
    (["--seed", "-1"], "--seed must be a whole number of at least 0"), (["--confidence", "2"], "strictly between 0 and 1"),
])
def test_a_bad_setting_is_one_line(tmp_path, capsys, flags, words):
    run = terravis_run(tmp_path)
    labels = write_labels(tmp_path / "labels.jsonl", [{"id": f"{k}.png", "human": k} for k in range(6)])
    assert words in refused([run, labels, "--out", str(tmp_path / "o"), *flags], capsys)


def test_a_bad_out_or_a_run_given_twice_is_one_line(tmp_path, capsys):
    run = terravis_run(tmp_path)
    labels = write_labels(tmp_path / "labels.jsonl", [{"id": f"{k}.png", "human": k} for k in range(6)])
    taken = tmp_path / "taken"
    taken.write_text("a file")
    assert f"--out {taken} is a file" in refused([run, labels, "--out", str(taken)], capsys)
    assert "the same run is given twice" in refused([run, run, labels, "--out", str(tmp_path / "o")], capsys)
