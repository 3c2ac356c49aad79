"""bootstrap_ci: hand cases, scipy's one-sample bootstrap, unscored items and clusters; and
mean_with_interval, the fixed-seed form every summary prints."""
import numpy as np
import pytest
import scipy.stats

from vlmjudge.stats.interval import bootstrap_ci, interval_text, mean_with_interval


def test_hand_cases():
    # one item: every resample is that item
    r = bootstrap_ci([5.0], n_resamples=100)
    assert (r.value, r.low, r.high, r.n) == (5.0, 5.0, 5.0, 1)
    # scored items 1, 2, 3 (mean 2); one N/A and one failure counted beside them
    r = bootstrap_ci([1.0, 2.0, None, float("nan"), 3.0], n_resamples=2000)
    assert (r.value, r.n, r.n_na, r.n_failed) == (2.0, 3, 1, 1)
    assert (r.na_share, r.failed_share) == (0.2, 0.2)
    # resample means of three of {1, 2, 3} range over [1, 3]; P(mean = 1) = 1/27 > 2.5%
    assert (r.low, r.high) == (1.0, 3.0)


def test_records_and_no_scored_item():
    recs = [{"id": i, "score": s} for i, s in enumerate([1, 4, None])] + [{"id": 9, "score": 2, "status": "error"}]
    r = bootstrap_ci(recs, n_resamples=100)
    assert (r.value, r.n, r.n_na, r.n_failed) == (2.5, 2, 1, 1)
    with pytest.raises(ValueError):
        bootstrap_ci([None, None])


@pytest.mark.parametrize("method", ["percentile", "bca"])
def test_matches_scipy_one_sample(method):
    x = np.random.default_rng(5).gamma(2.0, size=60)
    ours = bootstrap_ci(x, n_resamples=2000, method=method, seed=3)
    ref = scipy.stats.bootstrap((x,), np.mean, n_resamples=20_000, rng=1,
                                method="BCa" if method == "bca" else method).confidence_interval
    half_width = (ref.high - ref.low) / 2
    assert ours.low == pytest.approx(ref.low, abs=0.2 * half_width)
    assert ours.high == pytest.approx(ref.high, abs=0.2 * half_width)


def test_cluster_key_on_records_widens_the_interval():
    rng = np.random.default_rng(6)
    effect = rng.normal(size=12)
    recs = [{"id": f"{p}-{q}", "prompt": p, "score": effect[p] + 0.01 * rng.normal()}
            for p in range(12) for q in range(5)]
    naive = bootstrap_ci(recs, n_resamples=1000)
    clustered = bootstrap_ci(recs, n_resamples=1000, cluster="prompt", method="bca")
    assert clustered.value == naive.value
    assert clustered.high - clustered.low > 1.5 * (naive.high - naive.low)


def test_mean_with_interval_leaves_out_unscored_items_and_is_the_same_every_time():
    values = [0.2, None, 0.9, float("nan"), 0.4, 0.7, 0.1]
    first = mean_with_interval(values)
    assert first == mean_with_interval(values)  # a fixed seed: the same bounds on every run
    assert first["n"] == 5 and first["mean"] == pytest.approx(2.3 / 5)
    assert first["low"] < first["mean"] < first["high"]
    assert 0.1 <= first["low"] and first["high"] <= 0.9  # a mean's bounds stay inside the data


def test_mean_with_interval_is_none_under_two_items_and_zero_width_for_identical_values():
    assert mean_with_interval([]) == {"mean": None, "low": None, "high": None, "n": 0}
    assert mean_with_interval([None, 3.0]) == {"mean": 3.0, "low": None, "high": None, "n": 1}
    same = mean_with_interval([0.1] * 7)  # 0.1 is inexact in binary: the bounds still equal the mean
    assert same["n"] == 7 and same["low"] == same["high"] == same["mean"] == pytest.approx(0.1)
    assert interval_text(mean_with_interval([2.0, 2.0])) == "2.000 [2.000, 2.000] (n=2)"
    assert interval_text(mean_with_interval([2.0])) == "2.000 (n=1, no interval under 2 items)"
    assert interval_text(mean_with_interval([None])) == "n/a (n=0)"
