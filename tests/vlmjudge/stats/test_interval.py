"""bootstrap_ci: hand cases, scipy's one-sample bootstrap, unscored items and clusters."""
import numpy as np
import pytest
import scipy.stats

from vlmjudge.stats.interval import bootstrap_ci


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
