"""Each method's human protocol through `vlmjudge agreement`: records as the method writes them,
labels as the annotation app writes them, and the method's own checks worked out by hand here
(TerraVis detection per image and per type, VIEScore2 grid IoU/F1 and SRCC, FAGER's A/B
agreement in each tie mode, Regeneration's ratings)."""
import json
import math

import pytest
from scipy import stats as scipy_stats

from vlmjudge.cli import main
from vlmjudge.outputs import write_jsonl, write_manifest
from vlmjudge.stats.human_sets.labels import label_method, label_rows

FAST = ["--resamples", "200"]


def run_agreement(tmp_path, method, records, labels, model="judge"):
    """Write the run and the labels, run the command, return its agreement.json."""
    run = tmp_path / "run.jsonl"
    write_jsonl(run, records)
    write_manifest(run, {"method": method, "model": model})
    human = tmp_path / "labels.jsonl"
    human.write_text("".join(json.dumps({"method": method, **line}) + "\n" for line in labels))
    out = tmp_path / "out"
    assert main(["agreement", str(run), str(human), "--out", str(out), *FAST]) == 0
    return json.loads((out / "agreement.json").read_text())


def table(details, title):
    """A details table as {first cell: the other cells}."""
    [found] = [t for t in details["tables"] if t["title"].startswith(title)]
    return {row[0]: row[1:] for row in found["rows"]}


def test_terravis_ratings_and_detection_per_image_and_per_type(tmp_path):
    from terravis import score_annotation

    judge = {0: {"support_stability": "major"}, 1: {}, 2: {"optical_effect": "minor"}, 3: {},
             4: {"support_stability": "major", "optical_effect": "minor"}, 5: {}}
    people = {0: ({"support_stability": "major"}, {"support_stability": "minor"}), 1: ({"optical_effect": "minor"}, {}),
              2: ({}, {}), 3: ({}, {}), 4: ({"support_stability": "major"}, {"support_stability": "major"})}
    ratings = {0: (2, 3), 1: (4, 4), 2: (5, 4), 3: (5, 5), 4: (1, 2)}
    records = [score_annotation({"image_id": f"{k}.png", "eligible": True,
                                 "violations": [{"type": t, "severity": s} for t, s in found.items()]}).to_json()
               for k, found in judge.items()]
    labels = [{"id": f"{k}.png", "annotator": who, "violations": people[k][n], "rating": ratings[k][n]}
              for k in people for n, who in enumerate(("ann", "bob"))]
    labels += [{"id": "5.png", "annotator": who, "eligible": False} for who in ("ann", "bob")]
    [run] = run_agreement(tmp_path, "terravis", records, labels)["runs"]
    assert run["not_applicable"] == ["5.png"] and run["matched"] == 5
    scores = [records[k]["score"] for k in people]
    expected = scipy_stats.spearmanr(scores, [sum(ratings[k]) / 2 for k in people]).statistic
    assert run["statistics"]["spearman"]["value"] == pytest.approx(expected)
    detection = table(run["details"], "Has a violation")
    # people's majority (one of two counts): 0, 1 and 4 have a violation; the judge flags 0, 2 and 4
    assert detection == {"violation": [2, 1], "clean": [1, 1]}
    assert run["details"]["measures"]["detection_precision"] == pytest.approx(2 / 3)
    per_type = table(run["details"], "Per violation type")
    assert per_type["Support and stability"][:4] == [2, 0, 0, 3]
    assert per_type["Optical effect"] == [0, 2, 1, 2, pytest.approx(2 / 5)]


def test_viescore2_srcc_and_grid_iou_and_f1(tmp_path):
    from viescore2.grid import Grid
    from viescore2.records import VIEScore2Record

    judge_grids = {0: {(1, 1), (1, 2)}, 1: set(), 2: {(3, 3)}, 3: None, 4: {(5, 5)}}
    people_grids = {0: [[1, 1]], 1: [[2, 2]], 2: [], 3: [[4, 4], [4, 5]], 4: "r5: 5"}
    judge_pq, people_pq = [8, 3, 6, 2, 9], [7, 4, 5, 3, 6]
    records = [VIEScore2Record(id=f"{k}.png", prompt="p", fields="pq_sc", grid_size=16, text="", finish_reason="stop",
                               read_status="ok" if cells is not None else "partial", scores={"pq": judge_pq[k], "sc": 5.0},
                               localization=None if cells is None else Grid(cells, n=16),
                               grid_status="failed" if cells is None else "ok").to_json()
               for k, cells in judge_grids.items()]
    labels = [{"id": f"{k}.png", "annotator": "ann", "pq": people_pq[k], "sc": 6, "grid": people_grids[k]}
              for k in judge_grids]
    [run] = run_agreement(tmp_path, "viescore2", records, labels)["runs"]
    measures = run["details"]["measures"]
    assert measures["srcc_pq"] == pytest.approx(scipy_stats.spearmanr(judge_pq, people_pq).statistic)
    assert measures["grid_iou"] == pytest.approx((0.5 + 0 + 0 + 1) / 4)  # the four images people marked
    assert measures["micro_f1"] == pytest.approx(2 * 2 / (2 * 2 + 2 + 3))  # tp 2, fp 2, fn 3
    assert measures["false_alarms"] == 1 and measures["parse_failures"] == 1
    assert table(run["details"], "Defect cells") == {"defects": [2, 1], "clean": [1, 0], "unreadable": [1, 0]}
    judge_overall = [math.sqrt(pq * 5.0) for pq in judge_pq]
    expected = scipy_stats.spearmanr(judge_overall, [math.sqrt(pq * 6) for pq in people_pq]).statistic
    assert run["statistics"]["spearman"]["value"] == pytest.approx(expected)


def test_fager_ab_choices_in_each_tie_mode(tmp_path):
    scores = {0: (90, 60), 1: (70, 80), 2: (50, 50), 3: (40, 70), 4: (80, 20), 5: (10, 90)}
    choices = {0: ("A", "A"), 1: ("B", "b"), 2: ("A", "tie"), 3: ("A", "A"), 4: ("A", "B"), 5: ("B", "B")}
    records = [record for k, (a, b) in scores.items()
               for record in ({"id": f"real/{k}.png", "status": "scored", "score": a},
                              {"id": f"gen/{k}.png", "status": "scored", "score": b})]
    labels = [{"id": f"{k}.png", "annotator": who, "a": f"real/{k}.png", "b": f"gen/{k}.png", "choice": pick[n]}
              for k, pick in choices.items() for n, who in enumerate(("ann", "bob"))]
    [run] = run_agreement(tmp_path, "fager", records, labels)["runs"]
    measures = run["details"]["measures"]
    # pair 4 is a tie among people and is left out; pair 2 the judge ties; pair 3 it gets wrong
    assert measures["ab_pairs"] == 5 and measures["people_ties"] == 1
    assert measures["ab_accuracy_tie_full"] == pytest.approx(4 / 5)
    assert measures["ab_accuracy_tie_zero"] == pytest.approx(3 / 5)
    assert measures["ab_accuracy_tie_skip"] == pytest.approx(3 / 4)
    assert table(run["details"], "A/B choice") == {"A": [1, 0, 1], "B": [1, 2, 0], "tie": [1, 0, 0]}
    margins = [a - b for a, b in scores.values()]
    people = [sum({"a": 1, "b": -1, "tie": 0}[c.lower()] for c in pick) / 2 for pick in choices.values()]
    assert run["statistics"]["pearson"]["value"] == pytest.approx(scipy_stats.pearsonr(margins, people).statistic)


def test_fager_labels_must_name_both_images(tmp_path, capsys):
    run = tmp_path / "run.jsonl"
    write_jsonl(run, [{"id": "x.png", "status": "scored", "score": 50.0}])
    write_manifest(run, {"method": "fager", "model": "judge"})
    human = tmp_path / "labels.jsonl"
    human.write_text(json.dumps({"id": "x.png", "method": "fager", "choice": "A"}) + "\n")
    assert main(["agreement", str(run), str(human), "--out", str(tmp_path / "o")]) == 2
    assert "does not name its images 'a' and 'b'" in capsys.readouterr().err


def test_regeneration_similarity_ratings(tmp_path):
    score = [91.0, 75.5, 88.0, 60.0, 70.0, 95.0]
    mllm = [5, 3, 3, 2, 4, 5]
    ratings = [(5, 4), (3, 3), (4, 5), (1, 2), (2, 2), (5, 5)]
    records = [{"id": f"cat{k}", "status": "scored", "score": s, "mllm_content_rating": m}
               for k, (s, m) in enumerate(zip(score, mllm))]
    labels = [{"id": f"cat{k}", "annotator": who, "rating": pair[n]}
              for k, pair in enumerate(ratings) for n, who in enumerate(("ann", "bob"))]
    result = run_agreement(tmp_path, "regeneration", records, labels)
    [run] = result["runs"]
    people = [sum(pair) / 2 for pair in ratings]
    assert run["statistics"]["spearman"]["value"] == pytest.approx(scipy_stats.spearmanr(score, people).statistic)
    assert run["details"]["measures"]["spearman_mllm_content"] == pytest.approx(
        scipy_stats.spearmanr(mllm, people).statistic)
    assert result["ceiling"]["annotators"] == 2


def test_a_relabel_replaces_the_earlier_label_and_methods_do_not_mix():
    rows = label_rows([{"id": "a", "annotator": "x", "human": 1}, {"id": "a", "annotator": "x", "human": 4},
                       {"id": "a", "annotator": "y", "human": 2}])
    assert rows[0]["raters"] == {"x": 4.0, "y": 2.0} and rows[0]["human"] == 3.0
    with pytest.raises(ValueError, match="mix methods"):
        label_method([{"id": "a", "method": "fager"}, {"id": "b", "method": "terravis"}])


@pytest.mark.parametrize("module, label, message", [
    ("terravis.human", {"id": "a", "rating": 7}, "rating must be"),
    ("terravis.human", {"id": "a", "violations": {"gravity": "major"}}, "unknown TerraVis violation type"),
    ("viescore2.human", {"id": "a", "pq": 12}, "outside 0..10"),
    ("fager.human", {"id": "a", "choice": "left"}, "choice must be"),
    ("regeneration.human", {"id": "a", "rating": 0}, "rating must be"),
])
def test_a_bad_label_names_its_line(module, label, message):
    import importlib

    protocol = importlib.import_module(module).PROTOCOL
    with pytest.raises(ValueError, match=f"labels line 1 .*{message}"):
        label_rows([label], protocol)
