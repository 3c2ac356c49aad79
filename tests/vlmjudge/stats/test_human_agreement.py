"""Agreement with people: scipy's correlations, tie-calibrated pairwise accuracy against a naive
double loop, bootstrap intervals, the inter-annotator ceiling and the paired judge comparison."""
import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as scipy_stats

from vlmjudge.stats import pair_accuracy
from vlmjudge.stats.human_agreement import (
    STATISTICS,
    PairwiseAccuracy,
    _correlations,
    _resamples,
    agreement,
    agreement_difference,
    inter_annotator,
    tie_calibrated_accuracy,
)

FAST = {"n_resamples": 100}


def naive_tie_calibrated_accuracy(metric, human):
    """Written apart from the module: try every candidate epsilon, walk every pair."""
    pairs = list(itertools.combinations(range(len(metric)), 2))
    candidates = sorted({0.0} | {abs(metric[i] - metric[j]) for i, j in pairs})
    best_accuracy, best_epsilon = -1.0, None
    for epsilon in candidates:
        agreed = 0
        for i, j in pairs:
            metric_gap, human_gap = metric[i] - metric[j], human[i] - human[j]
            if abs(metric_gap) <= epsilon:
                agreed += human_gap == 0
            else:
                agreed += (metric_gap > 0 and human_gap > 0) or (metric_gap < 0 and human_gap < 0)
        if agreed / len(pairs) > best_accuracy:
            best_accuracy, best_epsilon = agreed / len(pairs), epsilon
    return best_accuracy, best_epsilon


def correlated(n, seed, noise=0.5, levels=None):
    """Human scores and a metric that follows them loosely; integer humans when `levels`."""
    rng = np.random.default_rng(seed)
    human = rng.normal(size=n) if levels is None else rng.integers(1, levels + 1, n).astype(float)
    return human + rng.normal(scale=noise, size=n), human


# --- correlations equal scipy's ---------------------------------------------------------------

@pytest.mark.parametrize("metric, human", [
    ([1, 2, 2, 3, 5, 5, 4], [2, 1, 3, 3, 4, 4, 4]),
    ([0.1, 0.1, 0.1, 0.9, 0.5], [1, 2, 2, 5, 3]),
    ([3, 1, 2, 2], [1, 2, 3, 3]),
])
def test_correlations_equal_scipy_on_tied_inputs(metric, human):
    result = agreement(metric, human, **FAST)
    assert result["pearson"].value == pytest.approx(scipy_stats.pearsonr(metric, human)[0])
    assert result["spearman"].value == pytest.approx(scipy_stats.spearmanr(metric, human)[0])
    for variant in "bc":
        expected = scipy_stats.kendalltau(metric, human, variant=variant)[0]
        assert result[f"kendall_tau_{variant}"].value == pytest.approx(expected)
    assert result["kendall_tau_b"].value != pytest.approx(result["kendall_tau_c"].value)


# --- pairwise accuracy with tie calibration ---------------------------------------------------

def test_hand_case_picks_the_epsilon_that_ties_the_human_tie():
    # pairs: (0,1) gap .25 with a human tie, (0,2) and (1,2) ordered like people
    assert tie_calibrated_accuracy([0.5, 0.75, 0.0], [5, 5, 1]) == (1.0, 0.25)
    assert naive_tie_calibrated_accuracy([0.5, 0.75, 0.0], [5, 5, 1]) == (1.0, 0.25)


@pytest.mark.parametrize("metric, human, expected", [
    ([1, 2, 3, 4], [1, 3, 2, 4], (5 / 6, 0.0)),              # no ties anywhere: epsilon stays 0
    ([0.1, 0.2, 0.4, 0.7], [3, 3, 3, 3], (1.0, 0.6)),         # people tie everything
    ([1, 1, 1], [1, 2, 3], (0.0, 0.0)),                       # the metric ties everything
    ([2, 2, 2], [4, 4, 4], (1.0, 0.0)),                       # both tie everything
    ([0, 1, 2], [2, 1, 0], (0.0, 0.0)),                       # every pair reversed
])
def test_hand_cases_match_the_naive_double_loop(metric, human, expected):
    value, epsilon = tie_calibrated_accuracy(metric, human)
    assert (value, epsilon) == pytest.approx(expected)
    assert (value, epsilon) == pytest.approx(naive_tie_calibrated_accuracy(metric, human))


@pytest.mark.parametrize("seed", range(6))
def test_random_tied_inputs_match_the_naive_double_loop(seed):
    rng = np.random.default_rng(seed)
    metric = np.round(rng.normal(size=15), 1).tolist()
    human = rng.integers(1, 4, 15).astype(float).tolist()
    assert tie_calibrated_accuracy(metric, human) == naive_tie_calibrated_accuracy(metric, human)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 6), st.integers(1, 5)), min_size=2, max_size=12))
def test_property_matches_the_naive_double_loop(rows):
    metric = [m / 4 for m, _ in rows]
    human = [float(h) for _, h in rows]
    assert tie_calibrated_accuracy(metric, human) == naive_tie_calibrated_accuracy(metric, human)


def test_agreement_reports_the_chosen_epsilon():
    metric, human = [0.5, 0.5625, 0.0, 0.25], [5, 5, 1, 2]
    result = agreement(metric, human, **FAST)["pairwise_accuracy"]
    assert isinstance(result, PairwiseAccuracy)
    assert (result.value, result.epsilon) == tie_calibrated_accuracy(metric, human)
    assert (result.value, result.epsilon) == (1.0, 0.0625)


def test_equal_accuracy_keeps_the_smallest_epsilon():
    # epsilon 0.25 gains the human tie (0, 1) but loses the ordered pair (2, 3): no better than 0
    assert tie_calibrated_accuracy([0.5, 0.75, 0.0, 0.2], [5, 5, 1, 2]) == (5 / 6, 0.0)


def test_bootstrap_never_pairs_an_item_with_its_own_copy():
    # every pair is reversed, so the accuracy is 0 in any resample; counting an item against its
    # duplicate as a shared tie would lift some resamples above 0
    result = agreement([0, 1, 2], [2, 1, 0], n_resamples=200)["pairwise_accuracy"]
    assert result.value == 0.0 and result.high == 0.0 and result.n_resamples > 100


# --- intervals and perfect agreement ----------------------------------------------------------

@pytest.mark.parametrize("levels", [None, 5])
def test_intervals_cover_the_full_data_value(levels):
    metric, human = correlated(60, seed=1, levels=levels)
    result = agreement(metric, human, n_resamples=300)
    assert set(result) == set(STATISTICS)
    for name, estimate in result.items():
        assert estimate.low <= estimate.value <= estimate.high, name
        assert estimate.low < estimate.high, name
        assert estimate.n_resamples == 300


def test_group_bootstrap_covers_the_value_and_is_wider_for_clustered_scores():
    rng = np.random.default_rng(3)
    groups = np.repeat(np.arange(12), 5)
    shared = rng.normal(size=12)[groups]          # items of one prompt move together
    human = shared + 0.3 * rng.normal(size=60)
    metric = shared + 0.3 * rng.normal(size=60)
    by_group = agreement(metric, human, groups=groups, n_resamples=200)
    by_item = agreement(metric, human, n_resamples=200)
    for name in STATISTICS:
        assert by_group[name].low <= by_group[name].value <= by_group[name].high
    width = lambda e: e.high - e.low  # noqa: E731
    assert width(by_group["pearson"]) > width(by_item["pearson"])


def test_group_draws_take_whole_groups():
    codes = np.array([0, 0, 1, 1, 1, 2])
    rng = np.random.default_rng(0)
    for index in _resamples(6, codes, rng, 50, within=False):
        drawn = codes[index]
        for group in np.unique(drawn):
            assert np.sum(drawn == group) % np.sum(codes == group) == 0


def test_identical_scores_agree_perfectly():
    scores = [1.0, 2.0, 2.5, 3.5, 4.0, 5.0]
    result = agreement(scores, scores, **FAST)
    for name in STATISTICS:
        assert result[name].value == pytest.approx(1.0), name
    for name in ("pearson", "spearman", "kendall_tau_b", "pairwise_accuracy"):
        assert result[name].low == pytest.approx(1.0), name  # resampled copies tie, tau-c aside
    assert result["pairwise_accuracy"].epsilon == 0.0


def test_identical_tied_scores_agree_perfectly_but_for_tau_c():
    scores = [1.0, 2.0, 2.0, 3.5, 4.0, 4.0]
    result = agreement(scores, scores, **FAST)
    for name in ("pearson", "spearman", "kendall_tau_b", "pairwise_accuracy"):
        assert result[name].value == pytest.approx(1.0), name
    # tau-c divides by every pair, tied ones included, so ties keep it below 1 by definition
    assert result["kendall_tau_c"].value < 1.0


def test_system_level_correlates_system_means():
    rng = np.random.default_rng(5)
    systems = np.repeat(["a", "b", "c", "d", "e"], 8)
    quality = {"a": 1.0, "b": 2.0, "c": 2.5, "d": 4.0, "e": 3.0}
    human = np.array([quality[s] for s in systems]) + rng.normal(scale=0.3, size=40)
    metric = 0.5 * human + rng.normal(scale=0.3, size=40)
    result = agreement(metric, human, level="system", groups=systems, n_resamples=200)
    means_m = [metric[systems == s].mean() for s in "abcde"]
    means_h = [human[systems == s].mean() for s in "abcde"]
    assert result["pearson"].value == pytest.approx(scipy_stats.pearsonr(means_m, means_h)[0])
    assert result["kendall_tau_b"].value == pytest.approx(
        scipy_stats.kendalltau(means_m, means_h)[0])
    assert result["spearman"].low <= result["spearman"].value <= result["spearman"].high


# --- clear errors -----------------------------------------------------------------------------

@pytest.mark.parametrize("metric, human, kwargs, message", [
    ([1, 2, 3], [1, 2], {}, "metric has 3 scores but human has 2"),
    ([1], [1], {}, "at least 2 items"),
    ([1, float("nan"), 3, float("nan")], [1, 2, 3, 4], {}, r"metric holds NaN .* \[1, 3\]"),
    ([1, 2, 3], [1, float("nan"), 3], {}, r"human holds NaN .* \[1\]"),
    ([2, 2, 2], [1, 2, 3], {}, "every metric score is 2: the correlation is undefined"),
    ([1, 2, 3], [4, 4, 4], {}, "every human score is 4"),
    ([1, 2, 3], [1, 2, 3], {"level": "system"}, "needs groups"),
    ([1, 2, 3], [1, 2, 3], {"level": "prompt"}, "level must be one of"),
    ([1, 2, 3], [1, 2, 3], {"groups": ["a", "b"]}, "one group per item"),
    ([1, 2, 3], [1, 2, 3], {"level": "system", "groups": ["a"] * 3}, "at least 2 systems"),
    ([1, 2, 3], [1, 2, 3], {"confidence": 1.0}, "confidence"),
])
def test_bad_inputs_fail_clearly(metric, human, kwargs, message):
    with pytest.raises(ValueError, match=message):
        agreement(metric, human, **FAST, **kwargs)


# --- rank statistics ignore monotone transforms of the metric ---------------------------------

@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(-5, 5), st.integers(1, 5)), min_size=3, max_size=15))
def test_rank_statistics_are_invariant_under_monotone_transforms(rows):
    metric = np.array([m for m, _ in rows], dtype=float)
    human = np.array([h for _, h in rows], dtype=float)
    if np.ptp(metric) == 0 or np.ptp(human) == 0:
        return
    plain = _correlations(metric, human)
    stretched = _correlations(np.exp(metric) + metric ** 3, human)
    for name in ("spearman", "kendall_tau_b", "kendall_tau_c"):
        assert stretched[name] == pytest.approx(plain[name], abs=1e-12)


# --- the human ceiling ------------------------------------------------------------------------

def test_inter_annotator_is_each_rater_against_the_mean_of_the_others():
    nan = float("nan")
    ratings = np.array([[1, 2, 1], [2, 2, nan], [3, 4, 4], [4, 3, 5], [5, 5, nan], [2, nan, 1]])
    ceiling = inter_annotator(ratings)
    for k in range(3):
        others = np.delete(ratings, k, axis=1)
        rows = ~np.isnan(ratings[:, k]) & ~np.isnan(others).all(axis=1)
        own, rest = ratings[rows, k], np.nanmean(others[rows], axis=1)
        assert ceiling.per_annotator["pearson"][k] == pytest.approx(
            scipy_stats.pearsonr(own, rest)[0])
        assert ceiling.per_annotator["spearman"][k] == pytest.approx(
            scipy_stats.spearmanr(own, rest)[0])
    for name, values in ceiling.per_annotator.items():
        assert ceiling.mean[name] == pytest.approx(np.mean(values))


@pytest.mark.parametrize("ratings, message", [
    ([[1], [2], [3]], "at least 2 annotators"),
    ([[1, 2], [1, 3], [1, 4]], "every annotator 0's score is 1"),
    ([[1, float("nan")], [2, 3], [float("nan"), 4]], "annotator 0 shares fewer than 2"),
])
def test_inter_annotator_fails_clearly(ratings, message):
    with pytest.raises(ValueError, match=message):
        inter_annotator(ratings)


# --- which judge agrees better ----------------------------------------------------------------

def test_agreement_difference_prefers_the_closer_judge():
    rng = np.random.default_rng(7)
    human = rng.normal(size=60)
    close = human + 0.3 * rng.normal(size=60)
    loose = human + 1.5 * rng.normal(size=60)
    better = agreement_difference(close, loose, human, n_resamples=200)
    assert better.diff > 0 and better.low > 0 and better.p_greater < 0.05
    worse = agreement_difference(loose, close, human, n_resamples=200)
    assert worse.diff == pytest.approx(-better.diff)
    assert worse.high < 0 and worse.p_greater > 0.95


@pytest.mark.parametrize("statistic", STATISTICS)
def test_a_judge_against_itself_differs_by_nothing(statistic):
    metric, human = correlated(30, seed=2, levels=5)
    same = agreement_difference(metric, metric, human, statistic=statistic, n_resamples=100)
    assert (same.diff, same.low, same.high) == (0.0, 0.0, 0.0)
    assert same.p_greater == 1.0


def test_pairwise_accuracy_refuses_more_items_than_memory_allows(monkeypatch):
    monkeypatch.setattr(pair_accuracy, "MAX_PAIRWISE_ITEMS", 4)
    with pytest.raises(ValueError, match=r"over 5 distinct \(judge, human\) scores means 10 pairs in memory"):
        tie_calibrated_accuracy([1, 2, 3, 4, 5], [1, 2, 3, 4, 5])
    # items that repeat a (judge, human) pair of scores share one class: 6 items, 4 classes
    assert tie_calibrated_accuracy([1, 2, 3, 4, 4, 1], [1, 2, 3, 4, 4, 1])[0] == 1.0


def test_an_interval_with_no_defined_resample_fails_clearly():
    # two items and one resample, which (seed 0) draws the same item twice
    with pytest.raises(ValueError, match="no bootstrap resample gave a defined"):
        agreement([1, 2], [1, 2], n_resamples=1, seed=0)


def test_agreement_difference_rejects_an_unknown_statistic():
    with pytest.raises(ValueError, match="unknown statistic 'kappa'"):
        agreement_difference([1, 2, 3], [1, 3, 2], [1, 2, 3], statistic="kappa")
