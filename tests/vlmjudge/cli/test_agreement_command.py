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
