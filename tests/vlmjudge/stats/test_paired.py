"""paired_bootstrap: hand cases, agreement with scipy's paired bootstrap, pairing by id, and
the properties a comparison must have (identical runs, swapped runs, clustered data)."""
import numpy as np
import pytest
import scipy.stats
from hypothesis import given, settings, strategies as st

from vlmjudge.stats.paired import paired_bootstrap


def test_two_items_hand_case():
    # d = b - a = [0, 1]; a resample of 2 items has mean d 0, 0.5 or 1 with chance 1/4, 1/2, 1/4,
    # so P(diff > 0) = 3/4 and the 2.5% / 97.5% percentiles are 0 and 1.
    r = paired_bootstrap([0.0, 0.0], [0.0, 1.0], n_resamples=2000)
    assert r.diff == 0.5 and r.n == 2 and r.n_resamples == 2000
    assert (r.low, r.high) == (0.0, 1.0)
    assert abs(r.p_greater - 0.75) < 0.035


def test_missing_items_are_left_out_and_counted():
    # item 0 both scored; 1 N/A in a; 2 N/A in b; 3 failed in a; 4 N/A in both.
    a = [1.0, None, 2.0, float("nan"), None]
    b = [2.0, 3.0, None, 4.0, None]
    r = paired_bootstrap(a, b, n_resamples=50)
    assert (r.n, r.diff, r.n_one_sided, r.n_both_missing, r.n_items) == (1, 1.0, 3, 1, 5)
    assert (r.na_share_a, r.na_share_b) == (0.4, 0.4)
    assert (r.failed_share_a, r.failed_share_b) == (0.2, 0.0)
    assert r.failed_share_diff == -0.2 and r.na_share_diff == 0.0


def test_records_pair_by_id_and_read_status():
    a = [{"id": "x", "score": 1}, {"id": "y", "score": 2}, {"id": "z", "score": 5, "status": "failed"},
         {"id": "only_a", "score": 9}]
    b = [{"id": "y", "score": 4}, {"id": "x", "score": 1}, {"id": "z", "score": 3},
         {"id": "only_b", "score": 0, "status": "not_applicable"}]
    r = paired_bootstrap(a, b, n_resamples=100)
    # paired on x (1 vs 1) and y (2 vs 4): mean(b) - mean(a) = 2.5 - 1.5 = 1
    assert (r.n, r.diff, r.n_one_sided, r.n_unpaired) == (2, 1.0, 1, 2)
    assert r.failed_share_a == 0.25 and r.na_share_b == 0.25
    by_callable = paired_bootstrap(a, b, n_resamples=100, value=lambda rec: 2 * rec["score"])
    assert by_callable.diff == 2.0


def test_records_and_arrays_do_not_mix_and_ids_are_unique():
    with pytest.raises(ValueError):
        paired_bootstrap([{"id": 1, "score": 1}], [1.0])
    with pytest.raises(ValueError):
        paired_bootstrap([{"id": 1, "score": 1}] * 2, [{"id": 1, "score": 1}])
    with pytest.raises(ValueError):
        paired_bootstrap([1.0, 2.0], [1.0])
    with pytest.raises(ValueError):
        paired_bootstrap([None], [1.0])


def micro_f1(x, axis=0):
    """Micro F1 from per-item (tp, fp, fn) rows summed over the items axis."""
    tp, fp, fn = np.moveaxis(np.sum(x, axis=axis), -1, 0)
    return 2 * tp / (2 * tp + fp + fn)


def test_multi_column_statistic_micro_f1():
    # a: tp=1, fp=1, fn=1 -> 2/(2+1+1) = 0.5; b: tp=2, fp=0, fn=0 -> 1.0
    a = [[1, 0, 0], [0, 1, 1]]
    b = [[1, 0, 0], [1, 0, 0]]
    r = paired_bootstrap(a, b, statistic=micro_f1, n_resamples=500)
    assert r.diff == 0.5 and r.n == 2
    # the axis-vectorised path and a one-call-per-resample path see the same draws
    looped = paired_bootstrap(a, b, statistic=micro_f1, n_resamples=500, vectorized=False)
    assert (looped.low, looped.high, looped.p_greater) == (r.low, r.high, r.p_greater)


def test_rank_correlation_statistic_per_resample():
    rng = np.random.default_rng(3)
    human = rng.normal(size=80)
    a = np.column_stack([human, human + rng.normal(size=80)])
    b = np.column_stack([human, human + 0.3 * rng.normal(size=80)])

    def spearman(x):
        return scipy.stats.spearmanr(x[:, 0], x[:, 1]).statistic

    r = paired_bootstrap(a, b, statistic=spearman, n_resamples=300)
    assert r.diff == pytest.approx(spearman(b) - spearman(a))
    assert 0 < r.low < r.diff < r.high and r.p_greater > 0.95


@pytest.mark.parametrize("method", ["percentile", "bca"])
def test_matches_scipy_paired_bootstrap(method):
    rng = np.random.default_rng(7)
    a = rng.normal(size=50)
    b = a + 0.2 + rng.exponential(size=50)
    ours = paired_bootstrap(a, b, n_resamples=2000, method=method, seed=11)
    ref = scipy.stats.bootstrap((a, b), lambda x, y, axis=-1: y.mean(axis) - x.mean(axis), paired=True,
                                n_resamples=20_000, method="BCa" if method == "bca" else method, rng=5)
    half_width = (ref.confidence_interval.high - ref.confidence_interval.low) / 2
    # A 2.5% tail quantile from 2,000 skewed draws moves by about 5% of the half-width between
    # seeds; 20% is four of those, while a wrong method (percentile vs BCa here) is off by more.
    assert ours.low == pytest.approx(ref.confidence_interval.low, abs=0.2 * half_width)
    assert ours.high == pytest.approx(ref.confidence_interval.high, abs=0.2 * half_width)
    other = scipy.stats.bootstrap((a, b), lambda x, y, axis=-1: y.mean(axis) - x.mean(axis), paired=True,
                                  n_resamples=20_000, method="percentile" if method == "bca" else "BCa", rng=5)
    assert abs(ours.low - other.confidence_interval.low) > abs(ours.low - ref.confidence_interval.low)


def test_bca_clustered_runs_and_covers_the_estimate():
    rng = np.random.default_rng(2)
    clusters = np.repeat(np.arange(15), 4)
    a = rng.normal(size=60)
    b = a + rng.normal(size=15)[clusters] + 0.5
    r = paired_bootstrap(a, b, n_resamples=1000, cluster=clusters, method="bca")
    assert r.low < r.diff < r.high
    with pytest.raises(ValueError):
        paired_bootstrap(a, b, n_resamples=10, method="studentized")


def test_unequal_clusters_mean_shortcut_agrees_with_generic_path():
    rng = np.random.default_rng(4)
    sizes = rng.integers(1, 6, size=30)
    clusters = np.repeat(np.arange(30), sizes)
    a = rng.normal(size=len(clusters))
    b = a + rng.normal(size=30)[clusters]
    fast = paired_bootstrap(a, b, n_resamples=2000, cluster=clusters)
    slow = paired_bootstrap(a, b, statistic=lambda x: float(np.mean(x)), n_resamples=2000, cluster=clusters)
    width = fast.high - fast.low
    assert fast.diff == pytest.approx(slow.diff)
    assert abs(fast.low - slow.low) < 0.15 * width and abs(fast.high - slow.high) < 0.15 * width


values = st.lists(st.floats(-10, 10, allow_nan=False), min_size=2, max_size=30)


@settings(max_examples=25, deadline=None)
@given(values, st.sampled_from(["percentile", "bca"]))
def test_identical_runs_give_zero(x, method):
    r = paired_bootstrap(x, list(x), n_resamples=200, method=method)
    assert (r.diff, r.low, r.high, r.p_greater) == (0.0, 0.0, 0.0, 0.0)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.floats(-10, 10), st.floats(-10, 10)), min_size=2, max_size=30),
       st.sampled_from(["percentile", "bca"]))
def test_swapping_runs_negates_and_mirrors(pairs, method):
    a, b = np.array(pairs).T
    ab = paired_bootstrap(a, b, n_resamples=300, method=method)
    ba = paired_bootstrap(b, a, n_resamples=300, method=method)
    assert ba.diff == pytest.approx(-ab.diff, abs=1e-12)
    assert ba.low == pytest.approx(-ab.high, abs=1e-9) and ba.high == pytest.approx(-ab.low, abs=1e-9)


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 10_000), st.integers(6, 15), st.integers(4, 8))
def test_clustered_interval_is_wider_on_clustered_data(seed, n_clusters, size):
    rng = np.random.default_rng(seed)
    clusters = np.repeat(np.arange(n_clusters), size)
    a = rng.normal(size=n_clusters * size)
    # differences share a strong per-cluster effect and almost no item noise
    b = a + rng.normal(size=n_clusters)[clusters] + 0.01 * rng.normal(size=len(a))
    naive = paired_bootstrap(a, b, n_resamples=500)
    clustered = paired_bootstrap(a, b, n_resamples=500, cluster=clusters)
    assert clustered.high - clustered.low > naive.high - naive.low
