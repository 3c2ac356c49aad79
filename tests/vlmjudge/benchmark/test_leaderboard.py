"""The leaderboard of a benchmark (issue 48, item 4): every field of leaderboard.json, the joint
resampling of prompts across models and methods, several images per prompt drawn together,
prompts some model lacks left out and listed, ranks, mean ranks and Kendall's tau as scipy has it."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import stats

from vlmjudge.benchmark.leaderboard import LEADERBOARD_NAME, build_leaderboard, write_leaderboard

ROW_FIELDS = {"model", "method", "statistic", "value", "low", "high", "n", "n_not_applicable", "n_failed", "rank",
              "rank_low", "rank_high"}


def scores(base: float, scale: float = 1.0, ids=("p0", "p1", "p2", "p3", "p4", "p5")) -> dict:
    spread = [0.0, 0.21, -0.13, 0.08, -0.3, 0.17]
    return {i: round(scale * (base + spread[k % 6]), 6) for k, i in enumerate(ids)}


@pytest.fixture
def three_models(make_runs):
    return make_runs({"A": {"terravis": scores(0.5), "viescore2": scores(0.6, 10)},
                      "B": {"terravis": scores(0.45), "viescore2": scores(0.65, 10)},
                      "C": {"terravis": scores(0.35), "viescore2": scores(0.3, 10)}})


def by(board: dict, model: str, method: str, rows=None) -> dict:
    return next(r for r in (rows or board["rows"]) if r["model"] == model and r["method"] == method)


def test_every_field_of_item_4(three_models, suite_of):
    board = build_leaderboard(three_models, suite_of(), n_resamples=300)
    assert {"rows", "mean_rank", "ranking_agreement", "by_category", "prompts_missing", "n_paired_prompts"} <= set(board)
    assert len(board["rows"]) == 6 and all(ROW_FIELDS <= set(row) for row in board["rows"])
    assert all(row["statistic"] == "mean_score" for row in board["rows"])
    assert all(row["low"] <= row["value"] <= row["high"] for row in board["rows"])
    assert all(row["rank_low"] <= row["rank"] <= row["rank_high"] for row in board["rows"])
    assert board["n_paired_prompts"] == 6 and board["prompts_missing"] == {"A": [], "B": [], "C": []}
    assert by(board, "A", "terravis")["value"] == pytest.approx(np.mean(list(scores(0.5).values())))


def test_mean_rank_is_the_mean_of_the_rows_ranks(three_models, suite_of):
    board = build_leaderboard(three_models, suite_of(), n_resamples=50)
    for entry in board["mean_rank"]:
        mine = [r["rank"] for r in board["rows"] if r["model"] == entry["model"]]
        assert entry["n_methods"] == 2 and entry["mean_rank"] == pytest.approx(np.mean(mine))
    assert [e["model"] for e in board["mean_rank"]] == ["A", "B", "C"]  # 1.5, 1.5, 3: ties keep model order


def test_ranking_agreement_is_scipys_kendall_tau_of_the_models_values(three_models, suite_of):
    board = build_leaderboard(three_models, suite_of(), n_resamples=50)
    values = {m: [by(board, model, m)["value"] for model in "ABC"] for m in ("terravis", "viescore2")}
    (pair,) = board["ranking_agreement"]["pairs"]
    expected = stats.kendalltau(values["terravis"], values["viescore2"]).statistic
    assert (pair["a"], pair["b"], pair["n_models"]) == ("terravis", "viescore2", 3)
    assert pair["tau"] == pytest.approx(expected, abs=1e-15) and board["ranking_agreement"]["mean"] == pair["tau"]


def test_the_same_prompts_are_drawn_for_every_model_and_method(make_runs, suite_of):
    """B is A shifted by 0.1 on every prompt, and VIEScore2's scores are ten times TerraVis's: with
    one set of drawn prompts the intervals shift and scale exactly, and B is always first."""
    runs = make_runs({"A": {"terravis": scores(0.4), "viescore2": scores(0.4, 10)},
                      "B": {"terravis": scores(0.5), "viescore2": scores(0.5, 10)}})
    board = build_leaderboard(runs, suite_of(), n_resamples=400, seed=7)
    a, b = by(board, "A", "terravis"), by(board, "B", "terravis")
    assert (b["low"] - a["low"], b["high"] - a["high"]) == pytest.approx((0.1, 0.1), abs=1e-12)
    assert (b["rank_low"], b["rank_high"], a["rank_low"], a["rank_high"]) == (1, 1, 2, 2)
    ten = by(board, "A", "viescore2")
    assert (ten["low"], ten["high"]) == pytest.approx((10 * a["low"], 10 * a["high"]), abs=1e-9)


def test_all_images_of_a_drawn_prompt_go_together(make_runs, suite_of):
    """Two identical images per prompt carry the evidence of one: the interval is that of one image
    per prompt under the same seed (drawing the images alone would narrow it)."""
    single, double = {}, {}
    for model, base in (("A", 0.4), ("B", 0.5)):
        one = scores(base)
        single[model] = {"terravis": one}
        double[model] = {"terravis": {f"{p}/{k}": s for p, s in one.items() for k in range(2)}}
    one_board = build_leaderboard(make_runs(single), suite_of(), n_resamples=300, seed=3)
    two_board = build_leaderboard(make_runs(double), suite_of(), n_resamples=300, seed=3)
    for model in "AB":
        one, two = by(one_board, model, "terravis"), by(two_board, model, "terravis")
        assert (two["value"], two["low"], two["high"]) == pytest.approx((one["value"], one["low"], one["high"]))
        assert (one["n"], two["n"]) == (6, 12)


def test_a_prompt_some_model_lacks_is_listed_and_left_out_of_every_statistic(make_runs, suite_of):
    full = scores(0.5)
    short = {i: s for i, s in scores(0.4).items() if i != "p3"}
    runs = make_runs({"A": {"terravis": full, "viescore2": scores(0.5, 10)},
                      "B": {"terravis": short, "viescore2": scores(0.4, 10)}})
    board = build_leaderboard(runs, suite_of(), n_resamples=50)
    assert board["prompts_missing"] == {"A": [], "B": ["p3"]} and board["n_paired_prompts"] == 5
    a = by(board, "A", "terravis")
    assert a["value"] == pytest.approx(np.mean([s for i, s in full.items() if i != "p3"]))
    assert a["value_all"] == pytest.approx(np.mean(list(full.values())))
    assert (a["n"], a["n_records"], a["n_unpaired_records"]) == (5, 6, 1)
    assert by(board, "A", "viescore2")["n"] == 5  # the prompt leaves every method


def test_not_applicable_and_failed_images_are_counted_not_scored(make_runs, suite_of):
    odd = {**scores(0.5), "p1": None, "p2": "failed"}
    runs = make_runs({"A": {"terravis": odd}, "B": {"terravis": scores(0.4)}})
    row = by(build_leaderboard(runs, suite_of(), n_resamples=50), "A", "terravis")
    assert (row["n"], row["n_not_applicable"], row["n_failed"]) == (4, 1, 1)
    assert row["value"] == pytest.approx(np.mean([odd[i] for i in ("p0", "p3", "p4", "p5")]))


def test_a_model_with_nothing_scored_has_no_value_and_no_rank(make_runs, suite_of, tmp_path):
    runs = make_runs({"A": {"terravis": scores(0.5)}, "B": {"terravis": dict.fromkeys(scores(0.5))}})
    board = build_leaderboard(runs, suite_of(), n_resamples=50)
    b = by(board, "B", "terravis")
    assert (b["value"], b["low"], b["rank"], b["n"], b["n_not_applicable"]) == (None, None, None, 0, 6)
    assert next(e for e in board["mean_rank"] if e["model"] == "B") == \
        {"model": "B", "mean_rank": None, "n_methods": 0, "ranks": {"terravis": None}}
    assert json.loads(write_leaderboard(board, tmp_path / "out").read_text())["rows"][1]["value"] is None


def test_rows_per_category_use_the_prompts_with_that_tag(three_models, suite_of):
    board = build_leaderboard(three_models, suite_of(), n_resamples=50)
    keys = [(e["kind"], e["tag"], e["n_prompts"]) for e in board["by_category"]]
    assert keys == [("category", "animals", 3), ("category", "objects", 3), ("skill", "counting", 3)]
    animals = board["by_category"][0]
    expected = np.mean([scores(0.5)[p] for p in ("p0", "p2", "p4")])
    assert by(board, "A", "terravis", animals["rows"])["value"] == pytest.approx(expected)
    assert len(animals["rows"]) == 6 and all(r["rank"] is not None for r in animals["rows"])


def test_the_leaderboard_is_written_whole_as_strict_json(three_models, suite_of, tmp_path):
    board = build_leaderboard(three_models, suite_of(), n_resamples=20)
    path = write_leaderboard(board, tmp_path / "out")
    assert path.name == LEADERBOARD_NAME and json.loads(path.read_text()) == json.loads(json.dumps(board))
    earlier = path.read_text()
    with pytest.raises(ValueError, match="not finite|nan"):
        write_leaderboard({**board, "rows": [{"value": math.nan}]}, tmp_path / "out")
    assert path.read_text() == earlier and sorted(p.name for p in path.parent.iterdir()) == [LEADERBOARD_NAME]


def test_the_same_seed_gives_the_same_board(three_models, suite_of):
    first = build_leaderboard(three_models, suite_of(), n_resamples=100, seed=11)
    assert build_leaderboard(three_models, suite_of(), n_resamples=100, seed=11) == first
    assert build_leaderboard(three_models, suite_of(), n_resamples=100, seed=12)["rows"] != first["rows"]
