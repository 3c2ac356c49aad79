"""`--human FILE --human-format F` in the leaderboard: each method's agreement with people over all
models and per model under test (TerraVis' Table 2), through the agreement statistics and each
method's human protocol; labels naming no model are counted, bad label files are one line."""
from __future__ import annotations

import json

import numpy as np
import pytest

from vlmjudge.benchmark.leaderboard import build_leaderboard
from vlmjudge.benchmark.leaderboard_runs import LeaderboardError
from vlmjudge.stats.human_agreement import STATISTICS, agreement

MODELS = ("A", "B", "C")
IDS = [f"p{k}" for k in range(6)]
SETTINGS = {"n_resamples": 60, "seed": 5, "confidence": 0.9}


def people(model: int, k: int) -> float:
    """A person's 1-5 rating of model `model`'s image of prompt k."""
    return float(1 + (k * 7 + model * 3) % 5)


def judge(model: int, k: int) -> float:
    """A judge score that follows people on A and B, and not at all on C."""
    return 0.2 * people(model, k) - 0.1 * (k % 2) if model < 2 else 0.9 - 0.1 * k


@pytest.fixture
def runs(make_runs):
    return make_runs({name: {"terravis": {i: round(judge(m, k), 6) for k, i in enumerate(IDS)},
                             "viescore2": {i: round(10 * judge(m, k), 6) for k, i in enumerate(IDS)}}
                      for m, name in enumerate(MODELS)})


def write_labels(path, lines) -> str:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return str(path)


def direct(model_indices, scale: float = 1.0) -> dict:
    """The agreement statistics computed straight from the scores and ratings, prompts as groups."""
    pairs = [(m, k) for m in model_indices for k in range(len(IDS))]
    result = agreement([round(scale * judge(m, k), 6) for m, k in pairs], [people(m, k) for m, k in pairs],
                       groups=[IDS[k] for _, k in pairs], **SETTINGS)
    return {name: estimate.value for name, estimate in result.items()}


def values(entry: dict) -> dict:
    return {name: stat["value"] for name, stat in entry["statistics"].items()}


def test_labels_by_model_and_id_give_table_2(runs, suite_of, tmp_path):
    labels = write_labels(tmp_path / "labels.jsonl", [{"id": f"{name}/{i}", "human": people(m, k)}
                                                      for m, name in enumerate(MODELS) for k, i in enumerate(IDS)])
    board = build_leaderboard(runs, suite_of(), human=(labels, "labels"), **SETTINGS)
    human = board["human"]
    assert (human["n_labels"], human["n_unplaced"], human["labels_method"]) == (18, 0, None)
    assert human["statistics"] == list(STATISTICS)
    terravis, viescore2 = human["methods"]
    assert terravis["method"] == "terravis" and terravis["overall"]["n"] == 18
    assert values(terravis["overall"]) == pytest.approx(direct(range(3)))
    for m, name in enumerate(MODELS):
        assert values(terravis["by_model"][name]) == pytest.approx(direct([m]))
        assert values(viescore2["by_model"][name]) == pytest.approx(direct([m], 10.0))
    assert terravis["by_model"]["A"]["statistics"]["spearman"]["value"] > 0.5
    assert terravis["by_model"]["C"]["statistics"]["spearman"]["value"] < 0.5
    stat = terravis["overall"]["statistics"]["spearman"]
    assert stat["low"] <= stat["value"] <= stat["high"] and stat["n_resamples"] >= 1


def test_a_model_field_places_a_label_and_labels_of_a_method_are_rated_by_its_protocol(runs, suite_of, tmp_path):
    """TerraVis label lines (rating, annotator) placed by their `model` field; two annotators per
    image are averaged; every method is measured against the same people's numbers."""
    lines = [{"id": i, "model": name, "annotator": who, "method": "terravis", "eligible": True,
              "rating": people(m, k)} for m, name in enumerate(MODELS) for k, i in enumerate(IDS) for who in "xy"]
    labels = write_labels(tmp_path / "labels.jsonl", lines)
    board = build_leaderboard(runs, suite_of(), human=(labels, "labels"), **SETTINGS)
    assert board["human"]["labels_method"] == "terravis" and board["human"]["n_labels"] == 18
    assert values(board["human"]["methods"][1]["overall"]) == pytest.approx(direct(range(3), 10.0))


def test_a_public_set_is_placed_by_its_system_and_prompt_id(make_runs, suite_of, tmp_path):
    ids = ["00000", "00001", "00002", "00003"]
    runs = make_runs({name: {"terravis": {i: round(judge(m, k), 6) for k, i in enumerate(ids)}}
                      for m, name in enumerate(("DALLE_3", "SDXL"))})
    ratings = {i: {"prompt": f"prompt {i}", "models": {name: [people(m, k)] * 3 for m, name in
                                                       enumerate(("DALLE_3", "SDXL", "Midjourney"))}}
               for k, i in enumerate(ids)}
    (tmp_path / "genai_image.json").write_text(json.dumps(ratings))
    board = build_leaderboard(runs, suite_of(ids), human=(tmp_path / "genai_image.json", "genai-bench"), **SETTINGS)
    human = board["human"]
    assert (human["n_labels"], human["n_unplaced"]) == (12, 4)  # Midjourney is not under test
    assert human["unplaced"] == [f"{i}/Midjourney" for i in ids]
    assert human["methods"][0]["overall"]["n"] == 8 and human["methods"][0]["left_out"]["human_only"] == 0


def test_too_few_labels_for_a_model_say_why_instead_of_a_number(runs, suite_of, tmp_path):
    lines = [{"id": f"A/{i}", "human": people(0, k)} for k, i in enumerate(IDS)] + [{"id": "B/p0", "human": 3}]
    board = build_leaderboard(runs, suite_of(), human=(write_labels(tmp_path / "l.jsonl", lines), "labels"), **SETTINGS)
    terravis = board["human"]["methods"][0]
    assert terravis["by_model"]["B"]["unavailable"] == "too few items: 1 (a rank correlation needs at least 3)"
    assert terravis["by_model"]["B"]["n"] == 1
    assert terravis["by_model"]["C"] == {"n": 0, "unavailable": terravis["by_model"]["C"]["unavailable"]}
    assert terravis["left_out"]["run_only"] == 0 + 5 + 6  # records nobody labelled (A, B, C)


@pytest.mark.parametrize("human, words", [
    (lambda tmp: (write_labels(tmp / "l.jsonl", [{"id": "p0", "human": 3}]), "labels"), "names a model under test"),
    (lambda tmp: (write_labels(tmp / "l.jsonl", [{"id": "A/p0", "human": "high"}]), "labels"), "not a finite number"),
    (lambda tmp: (write_labels(tmp / "l.jsonl", []), "labels"), "holds no labels"),
    (lambda tmp: (str(tmp), "labels"), "is a folder"),
    (lambda tmp: (str(tmp / "missing.jsonl"), "labels"), "no such file"),
    (lambda tmp: (str(tmp / "missing.json"), "genai-bench"), "no genai_image.json"),
    (lambda tmp: (write_labels(tmp / "l.jsonl", [{"id": "A/p0", "human": 3}]), "csv"), "not one of"),
    (lambda tmp: (write_labels(tmp / "l.jsonl", [{"id": "A/p0", "human": 3, "method": "nope"}]), "labels"),
     "no method 'nope'"),
    (lambda tmp: "labels.jsonl", "(path, format)"),
])
def test_bad_human_labels_are_one_line_before_any_work(human, words, runs, suite_of, tmp_path):
    with pytest.raises(LeaderboardError) as caught:
        build_leaderboard(runs, suite_of(), human=human(tmp_path), **SETTINGS)
    assert words in str(caught.value) and "\n" not in str(caught.value)


def test_without_labels_there_is_no_human_field_value(runs, suite_of):
    assert build_leaderboard(runs, suite_of(), n_resamples=10)["human"] is None
    assert np.isfinite(build_leaderboard(runs, suite_of(), n_resamples=10)["rows"][0]["value"])


def test_a_set_with_several_images_per_model_and_prompt_is_refused_not_averaged(make_runs, suite_of):
    """T2IScoreScore rates many images of one generator per prompt (its error graphs); a benchmark
    run holds one image per prompt and model, so those labels cannot be paired with it."""
    from pathlib import Path

    release = Path(__file__).resolve().parents[2] / "data" / "t2iscorescore_release"
    ids = ["2", "3", "4"]
    runs = make_runs({name: {"terravis": {i: 0.5 for i in ids}} for name in ("SD2.0", "SD2.1")})
    with pytest.raises(LeaderboardError, match=r"labels 2\d different images as record '2' of model 'SD2.0' "
                                               r"\('images/002-0\d\.jpg.*`vlmjudge agreement`$"):
        build_leaderboard(runs, suite_of(ids), human=(release, "t2iscorescore"), **SETTINGS)
