"""`vlmjudge agreement` numbers that cannot mislead (issue 52, item 3): a correlation on 2 items is
absent with "too few items", never "1 [1, 1]"; rating-only TerraVis labels give no detection
measure at all; the human ceiling carries an interval and says what it assumes of the raters."""
import json

import numpy as np
import pytest

from vlmjudge.cli import main
from vlmjudge.outputs import write_jsonl, write_manifest

FAST = ["--resamples", "200"]


def agreement(tmp_path, records, labels, method=None, runs=1):
    """Write `runs` copies of the run and the labels, run the command; its JSON, stdout and page."""
    paths = []
    for k in range(runs):
        path = tmp_path / f"run{k}.jsonl"
        write_jsonl(path, [{**r, "score": r["score"] + 0.01 * k * (i % 2)} for i, r in enumerate(records)])
        write_manifest(path, {"method": method, "model": f"judge{k}"})
        paths.append(str(path))
    human = tmp_path / "labels.jsonl"
    human.write_text("".join(json.dumps(line) + "\n" for line in labels), encoding="utf-8")
    out = tmp_path / "out"
    assert main(["agreement", *paths, str(human), "--out", str(out), *FAST]) == 0
    return json.loads((out / "agreement.json").read_text()), (out / "report.html").read_text(encoding="utf-8")


def test_two_items_say_too_few_items_in_json_console_and_page(tmp_path, capsys):
    records = [{"id": "a", "status": "scored", "score": 0.2}, {"id": "b", "status": "scored", "score": 0.9}]
    labels = [{"id": "a", "human": 1.0}, {"id": "b", "human": 4.0}]
    result, page = agreement(tmp_path, records, labels, runs=2)
    for run in result["runs"]:
        for estimate in run["statistics"].values():
            assert estimate["value"] is None and estimate["low"] is None
            assert estimate["reason"] == "too few items: 2 (a rank correlation needs at least 3)"
        assert run["unreliable"] is True
    assert result["comparison"]["unavailable"].startswith("too few items every run scored: 2")
    out = capsys.readouterr().out
    assert "spearman too few items: 2" in out and "1.000 [1.000, 1.000]" not in out
    assert "too few items: 2" in page and "1 [1, 1]" not in page


def test_three_items_are_a_value_marked_unreliable(tmp_path):
    records = [{"id": k, "status": "scored", "score": s} for k, s in zip("abc", (0.2, 0.5, 0.9))]
    result, page = agreement(tmp_path, records, [{"id": k, "human": h} for k, h in zip("abc", (1.0, 3.0, 2.0))])
    [run] = result["runs"]
    assert run["statistics"]["spearman"]["value"] == pytest.approx(0.5) and run["unreliable"] is True
    assert "the intervals are unreliable" in page


def test_terravis_rating_only_labels_report_no_detection_measure(tmp_path):
    from terravis import score_annotation

    judge = [{}, {"support_stability": "major"}, {"optical_effect": "minor"}, {}]
    records = [score_annotation({"image_id": f"{k}.png", "eligible": True,
                                 "violations": [{"type": t, "severity": s} for t, s in found.items()]}).to_json()
               for k, found in enumerate(judge)]
    labels = [{"id": f"{k}.png", "method": "terravis", "annotator": who, "rating": rating}
              for k, pair in enumerate([(5, 4), (2, 2), (3, 4), (5, 5)]) for who, rating in zip(("ann", "bob"), pair)]
    result, page = agreement(tmp_path, records, labels, method="terravis")
    [run] = result["runs"]
    assert run["details"] == {"tables": [], "measures": {}}
    assert "detection" not in json.dumps(run) and "detection" not in page and "Has a violation" not in page


def test_the_human_ceiling_has_an_interval_and_its_assumption(tmp_path, capsys):
    rng = np.random.default_rng(3)
    truth = rng.uniform(1, 5, 30)
    labels = [{"id": f"i{k}", "annotator": who, "human": float(t + rng.normal(0, 0.5))}
              for k, t in enumerate(truth) for who in ("ann", "bob", "cy")]
    labels.append({"id": "solo", "annotator": "ann", "human": 3.0})  # one rater: compares no one
    records = [{"id": f"i{k}", "status": "scored", "score": float(t)} for k, t in enumerate(truth)]
    records.append({"id": "solo", "status": "scored", "score": 0.5})
    result, page = agreement(tmp_path, records, labels)
    ceiling = result["ceiling"]
    spearman = ceiling["interval"]["spearman"]
    assert spearman["value"] == pytest.approx(ceiling["mean"]["spearman"])
    assert spearman["low"] < spearman["value"] < spearman["high"] and spearman["n_resamples"] > 150
    assert ceiling["items"] == 30 and ceiling["items_with_one_rater"] == 1
    assert "interchangeable" in ceiling["assumption"] and "fewer than 2" in ceiling["assumption"]
    assert "interchangeable" in page and "mean leave-one-out [interval over items]" in page
    assert "human ceiling (3 annotators, 30 items): spearman" in capsys.readouterr().out


def test_the_judges_comparison_says_its_p_is_one_sided_beside_a_two_sided_interval(tmp_path):
    records = [{"id": f"i{k}", "status": "scored", "score": s} for k, s in enumerate((0.1, 0.4, 0.3, 0.8, 0.6, 0.9))]
    labels = [{"id": f"i{k}", "human": h} for k, h in enumerate((1.0, 2.0, 3.0, 4.0, 3.5, 5.0))]
    result, page = agreement(tmp_path, records, labels, runs=2)
    assert result["comparison"]["items"] == 6 and "pairs" in result["comparison"]
    assert "p is one-sided" in page and "interval two-sided" in page
