"""Rankings of models by several metrics (vlmjudge.stats.rankings): ranks with ties as `vlmjudge
compare` ranks, mean ranks as TerraVis' Figure 3 reports them, Kendall's tau between rankings as
scipy computes it, and the mean over pairs as its Table A4 reports it."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from vlmjudge.stats.board import leaderboard
from vlmjudge.stats.pairing import read_items
from vlmjudge.stats.rankings import kendall_tau, mean_ranks, ranking_agreement, ranks
from vlmjudge.stats.statistic import ColumnMean, Statistic

#: TerraVis' five T2I models in its Figure 3 order on COCO-T2I, and the mean ranks it prints.
FIGURE_3 = {"GPT Image 1.5": 1.38, "Nano Banana Pro": 2.75, "FLUX.2-dev": 3.00, "Qwen-Image": 3.88,
            "SD 3.5-Large": 4.00}


def test_min_ranks_share_the_best_place_and_skip_the_places_taken():
    assert ranks([0.75, 0.6, 0.75, 0.1]).tolist() == [1, 3, 1, 4]
    assert ranks([0.75, 0.6, 0.75, 0.1], higher_is_better=False).tolist() == [3, 2, 3, 1]


def test_average_ranks_share_the_mean_of_their_places():
    assert ranks([0.75, 0.6, 0.75, 0.1], ties="average").tolist() == [1.5, 3, 1.5, 4]
    assert ranks([3.0, 1.0, 2.0], higher_is_better=False, ties="average").tolist() == [3, 1, 2]


def test_a_model_without_a_value_takes_no_place():
    result = ranks([np.nan, 0.2, 0.9, np.nan])
    assert np.isnan(result[[0, 3]]).all() and result[[1, 2]].tolist() == [2, 1]


@pytest.mark.parametrize("bad", [{"higher_is_better": None}, {"ties": "dense"}])
def test_a_ranking_without_a_direction_or_with_unknown_ties_is_refused(bad):
    with pytest.raises(ValueError, match="higher_is_better|ties"):
        ranks([1.0, 2.0], **bad)


def test_ranks_are_those_the_compare_leaderboard_gives():
    """The board of `vlmjudge compare` ranks the same way, ties included (min ranks)."""
    values = [0.5, 0.7, 0.5, 0.2, 0.9]
    items = [read_items([{"id": f"i{k}", "row": [v]} for k in range(4)], value="row", status_key="\0")
             for v in values]
    rows = [np.full((4, 1), v) for v in values]
    statistic = Statistic("mean", lambda record: None, ColumnMean(0))
    board = leaderboard([f"m{k}" for k in range(5)], items, rows, statistic, 20, 0, 0.95)
    by_label = {row["label"]: row["rank"] for row in board}
    assert [by_label[f"m{k}"] for k in range(5)] == ranks(values).tolist()


def test_mean_ranks_reproduce_figure_3_of_terravis():
    """Figure 3 prints only the means over eight metrics; rank sums 11, 22, 24, 31, 32 give them."""
    table = [[1, 2, 3, 4, 5]] * 5 + [[2, 4, 3, 1, 5]] + [[2, 4, 3, 5, 1]] * 2
    means, counts = mean_ranks(table)
    assert [round(m + 1e-9, 2) for m in means] == list(FIGURE_3.values())
    assert counts.tolist() == [8] * 5


def test_a_mean_rank_counts_only_the_metrics_that_ranked_the_model():
    means, counts = mean_ranks([[1, np.nan, 2], [2, np.nan, 1], [1, np.nan, np.nan]])
    assert means[0] == pytest.approx(4 / 3) and np.isnan(means[1]) and means[2] == 1.5
    assert counts.tolist() == [3, 0, 2]


def test_kendall_tau_is_scipys_on_the_models_both_scored():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=9), rng.normal(size=9)
    a[2], b[5] = np.nan, np.nan
    keep = [k for k in range(9) if k not in (2, 5)]
    tau, n = kendall_tau(a, b)
    assert n == 7 and tau == pytest.approx(stats.kendalltau(a[keep], b[keep]).statistic, abs=1e-15)


def test_kendall_tau_with_ties_is_tau_b():
    tau, _ = kendall_tau([1, 1, 2, 3], [1, 2, 2, 3])
    assert tau == pytest.approx(stats.kendalltau([1, 1, 2, 3], [1, 2, 2, 3], variant="b").statistic)


@pytest.mark.parametrize("a, b", [([1.0], [2.0]), ([1.0, 1.0, 1.0], [1.0, 2.0, 3.0]), ([1.0, np.nan], [1.0, 2.0])])
def test_kendall_tau_is_undefined_without_two_models_or_without_spread(a, b):
    assert math.isnan(kendall_tau(a, b)[0])


def _evaluators(rankings: list[tuple[int, ...]]) -> dict[str, dict[str, float]]:
    """Each evaluator's value per model from its ranking (rank 0 best: value = -rank)."""
    names = ["GPT-5.5", "Gemma 4 31B", "open-1", "open-2", "open-3"]
    return {name: {model: -float(rank) for model, rank in zip(FIGURE_3, ranking)} for name, ranking in
            zip(names, rankings)}


@pytest.mark.parametrize("benchmark, rankings, mean, between", [
    ("COCO-T2I", [(0, 1, 2, 3, 4), (1, 0, 2, 3, 4), (0, 1, 3, 4, 2), (0, 1, 3, 4, 2), (1, 0, 3, 4, 2)], 0.64, 0.50),
    ("GenAI-Bench", [(0, 1, 2, 3, 4), (1, 0, 2, 3, 4), (0, 1, 3, 4, 2), (0, 1, 3, 4, 2), (0, 1, 2, 4, 3)], 0.68, 0.57),
])
def test_ranking_agreement_reproduces_table_a4_of_terravis(benchmark, rankings, mean, between):
    """Table A4 gives, over five evaluators ranking five models: tau 0.80 for GPT-5.5 and Gemma, a mean
    of 0.87 among the other three, the between-group and overall means. Rankings built to those
    pairwise taus (the table's own values are not in the text) give every number back."""
    result = ranking_agreement(_evaluators(rankings))
    pairs = result["pairs"]
    assert len(pairs) == 10 and round(result["mean"], 2) == mean
    assert pairs["GPT-5.5", "Gemma 4 31B"] == pytest.approx(0.80)
    others = [pairs[a, b] for a, b in itertools.combinations(["open-1", "open-2", "open-3"], 2)]
    assert round(sum(others) / 3, 2) == 0.87
    across = [tau for (a, b), tau in pairs.items() if (a in ("GPT-5.5", "Gemma 4 31B")) != (b in ("GPT-5.5", "Gemma 4 31B"))]
    assert len(across) == 6 and round(sum(across) / 6, 2) == between


def test_a_lower_is_better_metric_is_turned_around_before_tau():
    result = ranking_agreement({"score": {"A": 0.9, "B": 0.5, "C": 0.1}, "fid": {"A": 10.0, "B": 20.0, "C": 30.0}},
                               higher_is_better={"fid": False})
    assert result["pairs"]["score", "fid"] == pytest.approx(1.0)


def test_pairs_leave_out_models_a_metric_lacks_and_the_mean_skips_undefined_pairs():
    result = ranking_agreement({"a": {"A": 1.0, "B": 2.0, "C": 3.0}, "b": {"A": 1.0, "B": 3.0, "C": 2.0},
                                "flat": {"A": 5.0, "B": 5.0}})
    assert result["n_models"]["a", "b"] == 3 and result["n_models"]["a", "flat"] == 2
    assert math.isnan(result["pairs"]["a", "flat"]) and result["mean"] == pytest.approx(1 / 3)


def test_one_metric_has_no_pair_and_no_mean():
    result = ranking_agreement({"only": {"A": 1.0, "B": 2.0}})
    assert result["pairs"] == {} and math.isnan(result["mean"])
