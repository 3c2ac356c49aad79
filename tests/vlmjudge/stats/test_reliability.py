"""Statistics that cannot mislead (issue 52, item 3): a run scored on fewer items is marked and
warned of, under 10 paired items the test is the exact sign-flip test and every number is marked
unreliable, and an interval that disagrees with its p-value is explained beside it."""
from __future__ import annotations

from itertools import product

import numpy as np
import pytest

from vlmjudge.stats.board import compare_statistic
from vlmjudge.stats.reliability import consistency_note, unscored_warnings
from vlmjudge.stats.runs import compare_runs, read_runs
from vlmjudge.stats.statistic import ColumnMean, Statistic
from vlmjudge.stats.swap import EXACT_BELOW, paired_swap_test

MEAN = Statistic("mean score", lambda r: r.get("score"), ColumnMean(0))


def records(scores):
    """Records of the shared schema; None is an N/A item."""
    return [{"id": f"i{k}", "status": "scored" if s is not None else "not_applicable", "score": s}
            for k, s in enumerate(scores)]


def hand_exact_p(d):
    """The two-sided sign-flip p-value written out: every sign pattern, |mean| at least the observed."""
    d = np.asarray(d, dtype=float)
    observed = abs(d.mean())
    hits = sum(abs((np.array(signs) * d).mean()) >= observed - 1e-12 for signs in product((1, -1), repeat=len(d)))
    return hits / 2 ** len(d)


def test_the_issue_trial_is_marked_and_warned():
    """5 items, one run with 3 N/A scoring high: it still leads by the method's own mean, but the
    board says it rests on 2 items and a warning says so in words."""
    runs = read_runs([records([0.5, 0.6, 0.55, 0.4, 0.62]), records([0.9, 0.95, None, None, None]),
                      records([0.52, 0.64, 0.58, 0.41, 0.66])], labels=["a", "b", "c"], method="toy")
    result = compare_runs(runs, {"mean": MEAN}, n_resamples=200)
    board = {row["label"]: row for row in result["leaderboard"]}
    assert board["b"]["rank"] == 1 and (board["b"]["n_unscored"], board["b"]["n_items"]) == (3, 5)
    assert board["a"]["n_unscored"] == board["c"]["n_unscored"] == 0
    assert result["warnings"][0] == "run b: 3 of 5 items N/A, failed or absent; its mean score is over 2 items, " \
                                    "the others' over 5"
    assert any("unreliable" in line for line in result["warnings"])


def test_runs_with_equal_unscored_counts_get_no_warning():
    board = [{"label": "a", "n": 4, "n_unscored": 1, "n_items": 5}, {"label": "b", "n": 4, "n_unscored": 1,
                                                                      "n_items": 5}]
    assert unscored_warnings(board, "mean") == []


@pytest.mark.parametrize("d", [[0.1, 0.2, 0.3], [0.3, -0.1, 0.2, 0.25], [0.0, 0.1, 0.2, -0.05, 0.3],
                               [0.5, -0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5]])
def test_the_exact_test_equals_a_hand_count_of_all_sign_patterns(d):
    test = paired_swap_test(np.zeros(len(d)), np.asarray(d))
    assert test.exact and test.n_resamples == 2 ** len(d)
    assert test.pvalue == pytest.approx(hand_exact_p(d))


def test_three_items_all_favouring_b_give_p_one_quarter():
    """By hand: of the 8 sign patterns of (1, 1, 1), only all-plus and all-minus reach |mean| = 1."""
    assert paired_swap_test([0, 0, 0], [1, 1, 1]).pvalue == 0.25


def test_a_tie_stays_in_n_and_changes_no_p_value_of_the_mean():
    with_tie = paired_swap_test([0, 0, 0, 0], [1, 1, 1, 0])
    without = paired_swap_test([0, 0, 0], [1, 1, 1])
    assert with_tie.n == 4 and with_tie.pvalue == without.pvalue == 0.25


def test_from_ten_items_the_test_samples():
    test = paired_swap_test(np.zeros(EXACT_BELOW), np.linspace(0.1, 1, EXACT_BELOW), n_resamples=300)
    assert not test.exact and test.n_resamples == 300


def test_a_small_pair_is_exact_unreliable_and_its_disagreement_explained():
    """Three items all favouring b: the bootstrap interval excludes 0 (it only redraws positive
    differences) beside p = 0.25; the entry says why, in one sentence."""
    result = compare_statistic([records([0.1, 0.2, 0.3]), records([0.3, 0.4, 0.5])], ["a", "b"], MEAN,
                               n_resamples=300)
    pair = result["pairwise"][0]
    assert pair["exact_test"] and pair["unreliable"] and pair["p_value"] == 0.25
    assert pair["low"] > 0 and "unreliable" in pair["note"]
    assert pair["interval_vs_p"].startswith("the bootstrap interval excludes 0 but p = 0.25")
    assert [row["unreliable"] for row in result["leaderboard"]] == [True, True]


def test_a_pooled_statistic_on_few_items_takes_the_exact_test_too():
    """ColumnMean is pooled (one pass of blocks); under 10 items it leaves that path for the exact test."""
    result = compare_statistic([records([0.1, 0.2, 0.3, 0.2]), records([0.3, 0.4, 0.5, 0.1])], ["a", "b"], MEAN,
                               n_resamples=100)
    pair = result["pairwise"][0]
    assert pair["exact_test"] and pair["p_value"] == pytest.approx(hand_exact_p([0.2, 0.2, 0.2, -0.1]))


def test_twelve_items_are_neither_unreliable_nor_exact():
    scores = [0.1 * k % 1 for k in range(12)]
    result = compare_statistic([records(scores), records([s + 0.01 for s in scores])], ["a", "b"], MEAN,
                               n_resamples=100)
    pair = result["pairwise"][0]
    assert not pair["unreliable"] and not pair["exact_test"] and "note" not in pair


@pytest.mark.parametrize("entry, said", [
    ({"n": 12, "low": 0.1, "high": 0.3, "p_value": 0.01}, None),
    ({"n": 12, "low": -0.1, "high": 0.3, "p_value": 0.4}, None),
    ({"n": 3, "low": 0.1, "high": 0.3, "p_value": 0.25}, "excludes 0"),
    ({"n": 30, "low": -0.01, "high": 0.3, "p_value": 0.04}, "includes 0"),
])
def test_an_interval_and_its_p_value_agree_or_are_explained(entry, said):
    note = consistency_note(entry, 0.95)
    assert (note is None) if said is None else (said in note)
